import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideCall, type DecideInput } from '../../src/approval/decide.ts';
import { readAllowedTools } from '../../src/approval/allowed-tools.ts';
import { compilePolicy } from '../../src/approval/policy.ts';
import type { SafetyLevel } from '../../src/protocol/types.ts';

function input(
  name: string,
  safety: SafetyLevel,
  options: {
    args?: Record<string, unknown>;
    rules?: Parameters<typeof compilePolicy>[0];
    granted?: string[];
    allowed?: string[];
  } = {},
): DecideInput {
  const granted = new Set(options.granted ?? []);
  return {
    call: { name, arguments: options.args ?? {} },
    tool: { name, safety },
    policy: compilePolicy(options.rules ?? {}),
    grants: { has: (tool) => granted.has(tool) },
    allowedTools: options.allowed,
  };
}

describe('decideCall', () => {
  it('runs safe and cautious tools as auto', () => {
    assert.deepEqual(decideCall(input('search_web', 'safe')), {
      action: 'run',
      approvedBy: 'auto',
    });
    assert.deepEqual(decideCall(input('create_directory', 'cautious')), {
      action: 'run',
      approvedBy: 'auto',
    });
  });
  it('asks for a dangerous tool without a grant', () => {
    const decision = decideCall(input('send_notification', 'dangerous'));
    assert.equal(decision.action, 'ask');
    assert.match(
      decision.action === 'ask' ? decision.reason : '',
      /send_notification is a dangerous tool/,
    );
  });
  it('runs a dangerous tool that has a grant, as policy with the grant named', () => {
    assert.deepEqual(
      decideCall(input('send_notification', 'dangerous', { granted: ['send_notification'] })),
      {
        action: 'run',
        approvedBy: 'policy',
        rule: 'grant:send_notification',
      },
    );
  });
  it('never lets a grant override a deny', () => {
    const decision = decideCall(
      input('send_notification', 'dangerous', {
        args: { recipient: 'x@evil.com' },
        rules: { deny: ['send_notification(recipient:*@evil.com)'] },
        granted: ['send_notification'],
      }),
    );
    assert.equal(decision.action, 'deny');
    assert.ok(decision.action === 'deny');
    assert.equal(decision.code, 'PERMISSION_DENIED');
    assert.equal(decision.rule, 'send_notification(recipient:*@evil.com)');
    assert.match(decision.message, /deny rule "send_notification\(recipient:\*@evil\.com\)"/);
    assert.match(decision.message, /change the parameters/);
  });
  it('asks for a safe tool when an ask rule matches, even with a grant', () => {
    const decision = decideCall(
      input('search_web', 'safe', { rules: { ask: ['search_web'] }, granted: ['search_web'] }),
    );
    assert.deepEqual(decision, {
      action: 'ask',
      reason: 'policy rule "search_web" asks a human to decide',
      rule: 'search_web',
    });
  });
  it('runs a dangerous tool an allow rule matches, as policy', () => {
    const decision = decideCall(
      input('send_notification', 'dangerous', {
        args: { recipient: 'me@example.com' },
        rules: { allow: ['send_notification(recipient:*@example.com)'] },
      }),
    );
    assert.deepEqual(decision, {
      action: 'run',
      approvedBy: 'policy',
      rule: 'send_notification(recipient:*@example.com)',
    });
  });
  it('asks when the allow rule does not match the parameters', () => {
    const decision = decideCall(
      input('send_notification', 'dangerous', {
        args: { recipient: 'me@other.org' },
        rules: { allow: ['send_notification(recipient:*@example.com)'] },
      }),
    );
    assert.equal(decision.action, 'ask');
  });
  it('denies a call to a tool outside the note allowed_tools, before the policy allows it', () => {
    const decision = decideCall(
      input('search_web', 'safe', {
        rules: { allow: ['search_web'] },
        allowed: ['read_file', 'git_*'],
      }),
    );
    assert.ok(decision.action === 'deny');
    assert.match(decision.message, /allowed_tools lists only read_file, git_\*/);
    assert.equal(decision.rule, undefined);
  });
  it('lets allowed_tools only narrow: an allowed dangerous tool still asks', () => {
    assert.equal(
      decideCall(input('send_notification', 'dangerous', { allowed: ['send_notification'] }))
        .action,
      'ask',
    );
    assert.equal(decideCall(input('git_status', 'safe', { allowed: ['git_*'] })).action, 'run');
    assert.equal(decideCall(input('search_web', 'safe', { allowed: [] })).action, 'deny');
  });
  it('still applies a deny to a tool in allowed_tools', () => {
    assert.equal(
      decideCall(
        input('shell_exec', 'dangerous', {
          rules: { deny: ['shell_exec'] },
          allowed: ['shell_exec'],
        }),
      ).action,
      'deny',
    );
  });
});

describe('readAllowedTools', () => {
  it('reads a list, a single name and absence', () => {
    assert.deepEqual(readAllowedTools(['search_web', ' read_file ']), {
      allowed: ['search_web', 'read_file'],
    });
    assert.deepEqual(readAllowedTools('search_web'), { allowed: ['search_web'] });
    assert.deepEqual(readAllowedTools(undefined), { allowed: undefined });
    assert.deepEqual(readAllowedTools(null), { allowed: undefined });
  });
  it('turns anything else into no tool at all, with a problem', () => {
    for (const value of [42, { a: 1 }, ['ok', 3]]) {
      const read = readAllowedTools(value);
      assert.deepEqual(read.allowed, []);
      assert.match(read.problem ?? '', /allowed_tools must be a list of tool names/);
    }
  });
});
