import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Executor } from '../../src/execute/index.ts';
import type { ApprovalHandler, ApprovalRequest } from '../../src/execute/index.ts';
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
    preview: (args) => `send "${String(args['body'])}" to ${String(args['recipient'])}`,
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

describe('Executor approval of dangerous calls', () => {
  it('refuses a dangerous call when there is no approval handler, and never runs it', async () => {
    const { registry, runs } = notifier();
    const result = await new Executor(registry).execute(call);
    assert.equal(result.status, 'rejected');
    assert.equal(result.success, false);
    assert.equal(result.error?.code, 'PERMISSION_DENIED');
    assert.match(result.error?.message ?? '', /needs a human's approval/);
    assert.equal(result.metadata.attempts, 0);
    assert.equal(result.metadata.approved_by, null);
    assert.equal(runs.length, 0);
  });

  it('runs an approved call as approved by a human, after showing a preview', async () => {
    const { registry, runs } = notifier();
    const requests: ApprovalRequest[] = [];
    const approval: ApprovalHandler = async (request) => {
      requests.push(request);
      return { decision: 'approved' };
    };
    const result = await new Executor(registry, { approval }).execute(call);
    assert.equal(result.status, 'success');
    assert.equal(result.metadata.approved_by, 'human');
    assert.equal(requests.length, 1);
    assert.equal(requests[0]?.preview, 'send "deploy done" to ops@example.com');
    assert.equal(requests[0]?.tool.name, 'send_notification');
    assert.deepEqual(runs, [
      { recipient: 'ops@example.com', body: 'deploy done', method: 'email' },
    ]);
  });

  it('rejects a denied call with the reason and does not run it', async () => {
    const { registry, runs } = notifier();
    const approval: ApprovalHandler = async () => ({ decision: 'denied', reason: 'not today' });
    const result = await new Executor(registry, { approval }).execute(call);
    assert.equal(result.status, 'rejected');
    assert.equal(result.error?.code, 'REJECTED');
    assert.match(result.error?.message ?? '', /not today/);
    assert.equal(runs.length, 0);
  });

  it('runs a modified call with the new arguments, validated again', async () => {
    const { registry, runs } = notifier();
    const approval: ApprovalHandler = async () => ({
      decision: 'modified',
      arguments: { recipient: 'lead@example.com', body: 'deploy done (edited)', method: 'slack' },
    });
    const result = await new Executor(registry, { approval }).execute(call);
    assert.equal(result.status, 'success');
    assert.equal(result.metadata.approved_by, 'human-modified');
    assert.deepEqual(result.metadata.original_arguments, call.arguments);
    assert.deepEqual(runs, [
      { recipient: 'lead@example.com', body: 'deploy done (edited)', method: 'slack' },
    ]);
  });

  it('gives INVALID_PARAMS for modified arguments that do not validate, and does not run', async () => {
    const { registry, runs } = notifier();
    const approval: ApprovalHandler = async () => ({
      decision: 'modified',
      arguments: { recipient: 'lead@example.com', body: 'x', method: 'pigeon' },
    });
    const result = await new Executor(registry, { approval }).execute(call);
    assert.equal(result.status, 'error');
    assert.equal(result.error?.code, 'INVALID_PARAMS');
    assert.match(result.error?.message ?? '', /parameter 'method' must be one of/);
    assert.equal(runs.length, 0);
  });

  it('does not ask about a call whose own arguments are invalid', async () => {
    const { registry, runs } = notifier();
    let asked = 0;
    const approval: ApprovalHandler = async () => {
      asked += 1;
      return { decision: 'approved' };
    };
    const result = await new Executor(registry, { approval }).execute({
      ...call,
      arguments: { recipient: 'ops@example.com' },
    });
    assert.equal(result.error?.code, 'INVALID_PARAMS');
    assert.match(result.error?.message ?? '', /missing required parameter 'body' \(string\)/);
    assert.equal(asked, 0);
    assert.equal(runs.length, 0);
  });

  it('refuses the call when the approval handler itself fails', async () => {
    const { registry, runs } = notifier();
    const approval: ApprovalHandler = async () => {
      throw new Error('inbox unreachable');
    };
    const result = await new Executor(registry, { approval }).execute(call);
    assert.equal(result.status, 'rejected');
    assert.equal(result.error?.code, 'PERMISSION_DENIED');
    assert.match(result.error?.message ?? '', /inbox unreachable/);
    assert.equal(runs.length, 0);
  });

  it('skips the handler for a pre-approved call and records who approved it', async () => {
    const { registry, runs } = notifier();
    let asked = 0;
    const approval: ApprovalHandler = async () => {
      asked += 1;
      return { decision: 'denied' };
    };
    const executor = new Executor(registry, { approval });
    const byPolicy = await executor.execute(call, { approvedBy: 'policy' });
    assert.equal(byPolicy.status, 'success');
    assert.equal(byPolicy.metadata.approved_by, 'policy');
    const original = { recipient: 'x@example.com', body: 'before' };
    const modified = await executor.execute(call, {
      approvedBy: 'human-modified',
      originalArguments: original,
    });
    assert.equal(modified.metadata.approved_by, 'human-modified');
    assert.deepEqual(modified.metadata.original_arguments, original);
    assert.equal(asked, 0);
    assert.equal(runs.length, 2);
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
