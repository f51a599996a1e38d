import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Executor } from '../../src/execute/index.ts';
import type { ToolCall } from '../../src/protocol/index.ts';
import { delay, registryWith, waitFor } from './helpers.ts';

function slowTool(ms: number) {
  const stats = { inFlight: 0, max: 0, runs: 0 };
  const { registry } = registryWith({
    name: 'slow',
    handler: async () => {
      stats.inFlight += 1;
      stats.runs += 1;
      stats.max = Math.max(stats.max, stats.inFlight);
      await delay(ms);
      stats.inFlight -= 1;
      return 'done';
    },
  });
  return { registry, stats };
}

const calls = (n: number, prefix = 'c'): ToolCall[] =>
  Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, name: 'slow', arguments: {} }));

describe('Executor concurrency cap', () => {
  it('never runs more than 10 of 100 slow calls at once, and does reach 10', async () => {
    const { registry, stats } = slowTool(50);
    const executor = new Executor(registry);
    let maxActive = 0;
    const sampler = setInterval(() => {
      maxActive = Math.max(maxActive, executor.active);
    }, 2);
    const results = await executor.executeAll(calls(100));
    clearInterval(sampler);
    assert.equal(stats.runs, 100);
    assert.equal(stats.max, 10);
    assert.ok(maxActive <= 10, `executor.active reached ${maxActive}`);
    assert.ok(results.every((r) => r.success));
    assert.deepEqual(
      results.map((r) => r.id),
      calls(100).map((c) => c.id),
      'results come back in input order',
    );
    assert.equal(executor.active, 0);
    assert.equal(executor.pending, 0);
  });

  it('shares one cap between two callers of executeAll', async () => {
    const { registry, stats } = slowTool(30);
    const executor = new Executor(registry, { concurrency: 4 });
    const [a, b] = await Promise.all([
      executor.executeAll(calls(12, 'a')),
      executor.executeAll(calls(12, 'b')),
    ]);
    assert.equal(stats.runs, 24);
    assert.equal(stats.max, 4);
    assert.ok([...a, ...b].every((r) => r.success));
  });

  it('reports queued calls as pending', async () => {
    const { registry } = slowTool(40);
    const executor = new Executor(registry, { concurrency: 2 });
    const all = executor.executeAll(calls(5));
    await waitFor(() => executor.active === 2 && executor.pending === 3, 2000, 'a full queue');
    await all;
    assert.equal(executor.pending, 0);
  });
});

describe('Executor timeout', () => {
  it('times out a tool that never resolves and ignores its signal, and frees its slot', async () => {
    let seenSignal: AbortSignal | undefined;
    let fastRuns = 0;
    const { registry } = registryWith(
      {
        name: 'hang',
        handler: (_args, ctx) => {
          seenSignal = ctx.signal;
          return new Promise(() => {});
        },
      },
      {
        name: 'fast',
        handler: () => {
          fastRuns += 1;
          return 'fast';
        },
      },
    );
    const executor = new Executor(registry, { concurrency: 1, timeoutMs: 100 });
    const hung = executor.execute({ id: 'h', name: 'hang', arguments: {} });
    const following = executor.execute({ id: 'f', name: 'fast', arguments: {} });
    const result = await hung;
    assert.equal(result.status, 'error');
    assert.equal(result.error?.code, 'TIMEOUT');
    assert.equal(result.error?.recoverable, true);
    assert.match(result.error?.message ?? '', /hang did not finish within 100 ms/);
    assert.equal(
      result.metadata.attempts,
      1,
      'a tool that is neither read-only nor idempotent is not retried',
    );
    assert.equal(seenSignal?.aborted, true, 'the handler’s signal is aborted at the deadline');
    const next = await following;
    assert.equal(next.success, true);
    assert.equal(fastRuns, 1);
    assert.equal(executor.active, 0);
  });

  it('retries a read-only tool that times out, up to the attempt limit', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'hang',
      readOnly: true,
      handler: () => {
        runs += 1;
        return new Promise(() => {});
      },
    });
    const executor = new Executor(registry, {
      timeoutMs: 50,
      retry: { attempts: 3, baseDelayMs: 5 },
    });
    const result = await executor.execute({ id: 'h', name: 'hang', arguments: {} });
    assert.equal(result.error?.code, 'TIMEOUT');
    assert.equal(result.metadata.attempts, 3);
    assert.equal(runs, 3);
    assert.equal(executor.metrics()['hang']?.timeouts, 1);
  });
});
