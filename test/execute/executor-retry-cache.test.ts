import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApprovalGate } from '../../src/approval/gate.ts';
import { compilePolicy } from '../../src/approval/policy.ts';
import { Executor } from '../../src/execute/index.ts';
import { ToolError } from '../../src/protocol/index.ts';
import type { ToolDefinition } from '../../src/protocol/index.ts';
import { registryWith, waitFor } from './helpers.ts';

const fastRetry = { attempts: 3, baseDelayMs: 2 };

/** A tool that throws `error` on its first `failures` runs, then returns 'ok'. */
function flaky(failures: number, error: () => unknown, extra: Partial<ToolDefinition> = {}) {
  const counter = { runs: 0 };
  const { registry } = registryWith({
    name: 'flaky',
    ...extra,
    handler: () => {
      counter.runs += 1;
      if (counter.runs <= failures) throw error();
      return 'ok';
    },
  });
  return { executor: new Executor(registry, { retry: fastRetry }), counter };
}

const call = { id: 'r1', name: 'flaky', arguments: {} };
const recoverable = () => new ToolError('EXECUTION_FAILED', 'upstream 503', { recoverable: true });

describe('Executor retries', () => {
  it('retries a recoverable error of a read-only tool until it succeeds', async () => {
    const { executor, counter } = flaky(2, recoverable, { readOnly: true });
    const result = await executor.execute(call);
    assert.equal(result.status, 'success');
    assert.equal(result.metadata.attempts, 3);
    assert.equal(counter.runs, 3);
  });

  it('retries a recoverable error of an idempotent tool', async () => {
    const { executor, counter } = flaky(1, recoverable, { idempotent: true });
    const result = await executor.execute(call);
    assert.equal(result.status, 'success');
    assert.equal(counter.runs, 2);
  });

  it('stops at the attempt limit and reports the last error', async () => {
    const { executor, counter } = flaky(10, recoverable, { readOnly: true });
    const result = await executor.execute(call);
    assert.equal(result.error?.code, 'EXECUTION_FAILED');
    assert.equal(result.error?.message, 'upstream 503');
    assert.equal(result.error?.recoverable, true);
    assert.equal(result.metadata.attempts, 3);
    assert.equal(counter.runs, 3);
  });

  it('does not retry a tool that is neither read-only nor idempotent', async () => {
    const { executor, counter } = flaky(1, recoverable);
    const result = await executor.execute(call);
    assert.equal(result.status, 'error');
    assert.equal(counter.runs, 1);
  });

  it('does not retry an error that is not recoverable', async () => {
    const { executor, counter } = flaky(1, () => new ToolError('EXECUTION_FAILED', 'bad input'), {
      readOnly: true,
    });
    const result = await executor.execute(call);
    assert.equal(result.error?.recoverable, false);
    assert.equal(counter.runs, 1);
  });

  it('never retries an error that left a side effect', async () => {
    const error = () =>
      new ToolError('EXECUTION_FAILED', 'sent, then the connection dropped', {
        recoverable: true,
        sideEffect: true,
      });
    const { executor, counter } = flaky(1, error, { idempotent: true });
    const result = await executor.execute(call);
    assert.equal(result.status, 'error');
    assert.equal(counter.runs, 1);
  });

  it('turns any other throw into EXECUTION_FAILED with its message, without retrying', async () => {
    const { executor, counter } = flaky(1, () => new TypeError('cannot read x'), {
      readOnly: true,
    });
    const result = await executor.execute(call);
    assert.equal(result.error?.code, 'EXECUTION_FAILED');
    assert.equal(result.error?.message, 'cannot read x');
    assert.equal(counter.runs, 1);
    const thrownString = flaky(1, () => 'plain string');
    const second = await thrownString.executor.execute(call);
    assert.equal(second.error?.message, 'plain string');
  });

  it('keeps the code and data of a ToolError', async () => {
    const { executor } = flaky(
      1,
      () => new ToolError('PERMISSION_DENIED', 'outside the vault', { data: { path: '/etc' } }),
    );
    const result = await executor.execute(call);
    assert.equal(result.error?.code, 'PERMISSION_DENIED');
    assert.deepEqual(result.data, { path: '/etc' });
  });
});

describe('Executor cache', () => {
  function counted(readOnly: boolean, cacheTtlMs?: number, cacheable?: boolean) {
    const counter = { runs: 0 };
    const { registry } = registryWith({
      name: 'lookup',
      readOnly,
      ...(cacheable === undefined ? {} : { cacheable }),
      parameters: {
        q: { type: 'string' },
        n: { type: 'integer', default: 1 },
        opts: { type: 'object' },
      },
      handler: (args) => {
        counter.runs += 1;
        return { q: args['q'], run: counter.runs };
      },
    });
    const executor = new Executor(registry, cacheTtlMs === undefined ? {} : { cacheTtlMs });
    return { executor, counter };
  }

  it('serves a read-only call again from the cache, keyed by canonical arguments', async () => {
    const { executor, counter } = counted(true);
    const first = await executor.execute({
      id: 'a',
      name: 'lookup',
      arguments: { q: 'x', opts: { b: 1, a: 2 } },
    });
    const second = await executor.execute({
      id: 'b',
      name: 'lookup',
      arguments: { opts: { a: 2, b: 1 }, n: 1, q: 'x' },
    });
    assert.equal(counter.runs, 1);
    assert.equal(first.metadata.cached, false);
    assert.equal(second.metadata.cached, true);
    assert.equal(second.metadata.attempts, 0);
    assert.equal(second.id, 'b');
    assert.deepEqual(second.data, first.data);
    assert.equal(second.content, first.content);
    const other = await executor.execute({ id: 'c', name: 'lookup', arguments: { q: 'y' } });
    assert.equal(other.metadata.cached, false);
    assert.equal(counter.runs, 2);
    assert.equal(executor.metrics()['lookup']?.cacheHits, 1);
  });

  it('does not cache a tool that is not read-only', async () => {
    const { executor, counter } = counted(false);
    await executor.execute({ id: 'a', name: 'lookup', arguments: { q: 'x' } });
    const second = await executor.execute({ id: 'b', name: 'lookup', arguments: { q: 'x' } });
    assert.equal(second.metadata.cached, false);
    assert.equal(counter.runs, 2);
  });

  it('does not cache a read-only tool declared not cacheable (a file read)', async () => {
    const { executor, counter } = counted(true, undefined, false);
    await executor.execute({ id: 'a', name: 'lookup', arguments: { q: 'x' } });
    const second = await executor.execute({ id: 'b', name: 'lookup', arguments: { q: 'x' } });
    assert.equal(second.metadata.cached, false);
    assert.equal(counter.runs, 2);
  });

  it('runs the tool again once the TTL has passed, and after clearCache', async () => {
    const { executor, counter } = counted(true, 40);
    const run = () => executor.execute({ id: 'a', name: 'lookup', arguments: { q: 'x' } });
    await run();
    await waitFor(async () => !(await run()).metadata.cached, 3000, 'the cache entry to expire');
    assert.equal(counter.runs, 2);
    executor.clearCache();
    assert.equal((await run()).metadata.cached, false);
    assert.equal(counter.runs, 3);
  });

  it('forgets every cached answer once a call that may have changed something ran', async () => {
    const state = { value: 1 };
    const { registry } = registryWith(
      { name: 'read_value', readOnly: true, handler: () => ({ value: state.value }) },
      {
        name: 'bump_value',
        safety: 'cautious',
        handler: () => {
          state.value += 1;
          return 'bumped';
        },
      },
    );
    const executor = new Executor(registry, {
      gate: new ApprovalGate({ policy: compilePolicy({}) }),
    });
    const read = () => executor.execute({ id: 'r', name: 'read_value', arguments: {} });
    assert.deepEqual((await read()).data, { value: 1 });
    assert.equal((await read()).metadata.cached, true);
    await executor.execute({ id: 'w', name: 'bump_value', arguments: {} });
    const after = await read();
    assert.equal(after.metadata.cached, false);
    assert.deepEqual(after.data, { value: 2 });
  });

  it('does not cache failures', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'lookup',
      readOnly: true,
      handler: () => {
        runs += 1;
        throw new Error('nope');
      },
    });
    const executor = new Executor(registry);
    await executor.execute({ id: 'a', name: 'lookup', arguments: {} });
    await executor.execute({ id: 'b', name: 'lookup', arguments: {} });
    assert.equal(runs, 2);
  });
});

describe('Executor rate limits', () => {
  it('gives RATE_LIMITED without running once a tool is over its own limit', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'notify',
      rateLimit: { max: 2, windowMs: 60_000 },
      handler: () => {
        runs += 1;
        return 'sent';
      },
    });
    const executor = new Executor(registry);
    const results = await executor.executeAll(
      ['a', 'b', 'c'].map((id) => ({ id, name: 'notify', arguments: {} })),
    );
    assert.deepEqual(
      results.map((r) => r.error?.code ?? 'ok'),
      ['ok', 'ok', 'RATE_LIMITED'],
    );
    assert.equal(results[2]?.error?.recoverable, true);
    assert.match(results[2]?.error?.message ?? '', /notify is over its rate limit; try again in/);
    assert.equal(runs, 2);
  });

  it('lets the executor options override the tool’s limit, and frees slots as the window slides', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'notify',
      rateLimit: { max: 100, windowMs: 60_000 },
      handler: () => {
        runs += 1;
        return 'sent';
      },
    });
    const executor = new Executor(registry, { rateLimits: { notify: { max: 1, windowMs: 50 } } });
    const run = () => executor.execute({ id: 'x', name: 'notify', arguments: {} });
    assert.equal((await run()).success, true);
    assert.equal((await run()).error?.code, 'RATE_LIMITED');
    await waitFor(async () => (await run()).success, 3000, 'the window to slide');
    assert.equal(runs, 2);
  });
});
