import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ApprovalGate, type Authorization } from '../../src/approval/gate.ts';
import { GrantStore, toolIdentity } from '../../src/approval/grants.ts';
import { compilePolicy } from '../../src/approval/policy.ts';
import { withPack } from '../../src/protocol/define-tool.ts';
import { ApprovalRequests } from '../../src/approval/requests.ts';
import { Executor } from '../../src/execute/index.ts';
import { hashArguments } from '../../src/protocol/hash-arguments.ts';
import { capturingLogger, registryWith } from './helpers.ts';

function notifier() {
  const runs: Record<string, unknown>[] = [];
  const { registry } = registryWith({
    name: 'send_notification',
    safety: 'dangerous',
    parameters: {
      recipient: { type: 'string' },
      body: { type: 'string' },
      method: { type: 'string', enum: ['email', 'slack'], default: 'email' },
    },
    required: ['recipient', 'body'],
    handler: (args) => {
      runs.push(args);
      return { sent: true };
    },
  });
  return { registry, runs };
}

const call = {
  id: 'n1',
  name: 'send_notification',
  arguments: { recipient: 'ops@example.com', body: 'deploy done' },
};
const normal = { ...call.arguments, method: 'email' };

/** A gate with a request store in a temp folder, and a human's approval of `call`. */
async function approvedByHuman(args: Record<string, unknown> = normal) {
  const dir = await mkdtemp(join(tmpdir(), 'vaultd-gate-'));
  const requests = await ApprovalRequests.open(dir);
  const gate = new ApprovalGate({ requests });
  const gateCall = {
    id: call.id,
    name: call.name,
    arguments: normal,
    argsHash: hashArguments(normal),
    safety: 'dangerous' as const,
  };
  const request = await gate.ask({
    note: 'Pending_Approval/a.md',
    call: gateCall,
    reason: 'x',
    preview: null,
  });
  const decided = await gate.decide(request.id, {
    kind: 'approve',
    always: false,
    scope: null,
    channel: 'cli',
    by: 'alice',
    at: new Date().toISOString(),
    reason: null,
    arguments: null,
  });
  assert.ok(decided.ok);
  const consumed = await gate.consume(
    decided.request,
    { ...gateCall, arguments: args, argsHash: hashArguments(args) },
    'a.md',
  );
  assert.ok(consumed.ok);
  return {
    gate,
    auth: consumed.auth,
    cleanup: async () => {
      await requests.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe('Executor and the approval gate', () => {
  it('refuses a dangerous call that comes without a human decision, and never runs it', async () => {
    const { registry, runs } = notifier();
    const result = await new Executor(registry).execute(call);
    assert.equal(result.status, 'rejected');
    assert.equal(result.error?.code, 'PERMISSION_DENIED');
    assert.match(result.error?.message ?? '', /needs a human's decision/);
    assert.equal(result.metadata.attempts, 0);
    assert.equal(runs.length, 0);
  });

  it('runs a call a human approved once, recording who decided and through which channel', async () => {
    const { registry, runs } = notifier();
    const { gate, auth, cleanup } = await approvedByHuman();
    const executor = new Executor(registry, { gate });
    const result = await executor.execute(call, { authorization: auth });
    assert.equal(result.status, 'success');
    assert.equal(result.metadata.approved_by, 'human');
    assert.deepEqual(result.metadata.decided_by, {
      channel: 'cli',
      by: 'alice',
      request: auth.request,
      rule: null,
    });
    assert.deepEqual(runs, [normal]);
    const again = await executor.execute(call, { authorization: auth });
    assert.equal(again.error?.code, 'PERMISSION_DENIED', 'an authorization is redeemed once');
    assert.equal(runs.length, 1);
    await cleanup();
  });

  it('refuses an authorization for other arguments, one it did not issue, or a forged one', async () => {
    const { registry, runs } = notifier();
    const { gate, auth, cleanup } = await approvedByHuman();
    const executor = new Executor(registry, { gate });
    const other = await executor.execute(
      { ...call, arguments: { recipient: 'boss@example.com', body: 'deploy done' } },
      { authorization: auth },
    );
    assert.equal(other.error?.code, 'PERMISSION_DENIED');
    const forged: Authorization = { ...auth };
    const copied = await executor.execute(call, { authorization: forged });
    assert.equal(copied.error?.code, 'PERMISSION_DENIED', 'a copy of a permission is not one');
    const elsewhere = new Executor(registry);
    const foreign = await elsewhere.execute(call, { authorization: auth });
    assert.equal(foreign.error?.code, 'PERMISSION_DENIED', 'another gate never issued it');
    assert.equal(runs.length, 0);
    await cleanup();
  });

  it("runs the parameters a human edited as human-modified, with the agent's kept", async () => {
    const { registry, runs } = notifier();
    const edited = { recipient: 'lead@example.com', body: 'edited', method: 'slack' };
    const { gate, auth, cleanup } = await approvedByHuman(edited);
    const result = await new Executor(registry, { gate }).execute(
      { ...call, arguments: edited },
      { authorization: auth, originalArguments: call.arguments },
    );
    assert.equal(result.metadata.approved_by, 'human-modified');
    assert.deepEqual(result.metadata.original_arguments, call.arguments);
    assert.deepEqual(runs, [edited]);
    await cleanup();
  });

  it('lets policy decide: allow runs as policy, deny wins, ask needs a human', async () => {
    const { registry, runs } = notifier();
    const gate = new ApprovalGate({
      policy: compilePolicy({
        allow: ['send_notification(recipient:*@example.com)'],
        deny: ['send_notification(recipient:boss@*)'],
      }),
    });
    const executor = new Executor(registry, { gate });
    const allowed = await executor.execute(call);
    assert.equal(allowed.metadata.approved_by, 'policy');
    assert.equal(allowed.metadata.decided_by?.rule, 'send_notification(recipient:*@example.com)');
    const denied = await executor.execute({
      ...call,
      arguments: { recipient: 'boss@example.com', body: 'x' },
    });
    assert.equal(denied.error?.code, 'PERMISSION_DENIED');
    assert.match(denied.error?.message ?? '', /deny rule/);
    assert.equal(runs.length, 1);
  });

  it('checks a permission issued before a policy reload against the new deny rules (review finding)', async () => {
    // A call allowed (or approved) before a SIGHUP that added a deny rule, still queued for a
    // slot, ran after the operator forbade it.
    const { registry, runs } = notifier();
    const { gate, auth, cleanup } = await approvedByHuman();
    try {
      const executor = new Executor(registry, { gate });
      gate.setPolicy(compilePolicy({ deny: ['send_notification(recipient:*@example.com)'] }));
      const denied = await executor.execute(call, { authorization: auth });
      assert.equal(denied.error?.code, 'PERMISSION_DENIED');
      assert.match(denied.error?.message ?? '', /reloaded since it was allowed/);
      assert.equal(runs.length, 0);
    } finally {
      await cleanup();
    }
    // A reload that denies something else leaves the permission as it was.
    const other = await approvedByHuman();
    try {
      const executor = new Executor(registry, { gate: other.gate });
      other.gate.setPolicy(
        compilePolicy({ deny: ['send_notification(recipient:*@evil.example)'] }),
      );
      const ran = await executor.execute(call, { authorization: other.auth });
      assert.equal(ran.status, 'success');
      assert.equal(runs.length, 1);
    } finally {
      await other.cleanup();
    }
  });

  it('checks a permission no human gave against the whole reloaded policy, and a grant revoked since (review finding)', async () => {
    // Calls an allow rule let through, queued for a slot, still ran after a SIGHUP that removed
    // the rule or added an ask rule; a grant revoked while its call waited still covered it.
    const { registry, runs } = notifier();
    const gateCall = {
      id: call.id,
      name: call.name,
      arguments: normal,
      argsHash: hashArguments(normal),
      safety: 'dangerous' as const,
    };
    const allowedBy = (gate: ApprovalGate): Authorization => {
      const verdict = gate.evaluate(gateCall);
      assert.equal(verdict.action, 'run');
      return (verdict as { auth: Authorization }).auth;
    };
    for (const reloaded of [{}, { allow: ['send_notification'], ask: ['send_notification'] }]) {
      const gate = new ApprovalGate({ policy: compilePolicy({ allow: ['send_notification'] }) });
      const auth = allowedBy(gate);
      gate.setPolicy(compilePolicy(reloaded));
      const refused = await new Executor(registry, { gate }).execute(call, { authorization: auth });
      assert.equal(refused.error?.code, 'PERMISSION_DENIED', JSON.stringify(reloaded));
      assert.match(refused.error?.message ?? '', /asks a human first/);
    }
    assert.equal(runs.length, 0);
    // A reload that still allows it, and a safe tool with no rule at all, run as before.
    const kept = new ApprovalGate({ policy: compilePolicy({ allow: ['send_notification'] }) });
    const keptAuth = allowedBy(kept);
    kept.setPolicy(compilePolicy({ allow: ['send_notification'], deny: ['shell_exec'] }));
    const ran = await new Executor(registry, { gate: kept }).execute(call, {
      authorization: keptAuth,
    });
    assert.equal(ran.status, 'success');
    assert.equal(runs.length, 1);
    const safe = registryWith({ name: 'look', handler: () => 'seen' });
    const auto = new ApprovalGate({});
    const autoVerdict = auto.evaluate({
      ...gateCall,
      name: 'look',
      arguments: {},
      safety: 'safe',
      argsHash: hashArguments({}),
    });
    assert.equal(autoVerdict.action, 'run');
    auto.setPolicy(compilePolicy({ deny: ['shell_exec'] }));
    const looked = await new Executor(safe.registry, { gate: auto }).execute(
      { id: call.id, name: 'look', arguments: {} },
      { authorization: (autoVerdict as { auth: Authorization }).auth },
    );
    assert.equal(looked.status, 'success');

    const dir = await mkdtemp(join(tmpdir(), 'vaultd-grant-revoked-'));
    try {
      const grants = GrantStore.open(dir);
      const gate = new ApprovalGate({ grants });
      await grants.add('send_notification', { by: 'alice' });
      const auth = allowedBy(gate);
      assert.equal(auth.channel, 'grant');
      assert.equal(await grants.revoke('send_notification'), 1);
      const refused = await new Executor(registry, { gate }).execute(call, { authorization: auth });
      assert.equal(refused.error?.code, 'PERMISSION_DENIED');
      assert.equal(runs.length, 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('runs under a grant only the tool it was given for: not one of that name from another pack (review finding)', async () => {
    // Grants used to name a tool only: a grant of a plugin's send_notification covered the
    // send_notification another pack brought after it, which no human had looked at.
    const dir = await mkdtemp(join(tmpdir(), 'vaultd-grant-pack-'));
    try {
      const grants = GrantStore.open(dir);
      const gate = new ApprovalGate({ grants });
      const first = notifier();
      const [granted] = first.registry.list();
      assert.ok(granted !== undefined);
      const mine = withPack(granted, 'mail');
      first.registry.register(mine);
      await grants.add('send_notification', { by: 'alice', identity: toolIdentity(mine) });
      const executor = new Executor(first.registry, { gate });
      const ran = await executor.execute(call);
      assert.equal(ran.metadata.approved_by, 'policy');
      assert.equal(ran.metadata.decided_by?.rule, 'grant:send_notification');
      assert.equal(first.runs.length, 1);

      const second = notifier();
      const [theirs] = second.registry.list();
      assert.ok(theirs !== undefined);
      first.registry.register(withPack(theirs, 'other'));
      const asked = await executor.execute(call);
      assert.equal(asked.error?.code, 'PERMISSION_DENIED');
      assert.match(
        asked.error?.message ?? '',
        /grant "send_notification" was given for the send_notification of the mail pack/,
      );
      assert.equal(second.runs.length, 0, 'the other pack’s tool never ran');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('does not ask about a call whose own arguments are invalid', async () => {
    const { registry, runs } = notifier();
    const result = await new Executor(registry).execute({
      ...call,
      arguments: { recipient: 'ops@example.com' },
    });
    assert.equal(result.error?.code, 'INVALID_PARAMS');
    assert.match(result.error?.message ?? '', /missing required parameter 'body' \(string\)/);
    assert.equal(runs.length, 0);
  });

  it('runs safe calls as auto, and cautious calls as auto with a warning', async () => {
    const { logger, lines } = capturingLogger();
    const { registry } = registryWith(
      { name: 'look', handler: () => 'seen' },
      { name: 'make_dir', safety: 'cautious', handler: () => 'made' },
    );
    const executor = new Executor(registry, { logger });
    const safe = await executor.execute({ id: 's', name: 'look', arguments: {} });
    assert.equal(safe.metadata.approved_by, 'auto');
    assert.equal(safe.metadata.safety_level, 'safe');
    assert.equal(lines.filter((l) => l['level'] === 40).length, 0);
    const cautious = await executor.execute({ id: 'c', name: 'make_dir', arguments: {} });
    assert.equal(cautious.status, 'success');
    assert.equal(cautious.metadata.approved_by, 'auto');
    assert.equal(cautious.metadata.safety_level, 'cautious');
    const warnings = lines.filter((l) => l['level'] === 40);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.['tool'], 'make_dir');
    assert.equal(warnings[0]?.['callId'], 'c');
  });
});
