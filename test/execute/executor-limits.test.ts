import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Executor } from '../../src/execute/index.ts';
import { ToolError, type ToolCall } from '../../src/protocol/index.ts';
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
  it('times out a tool that stops on its signal, and frees its slot once it stopped', async () => {
    let seenSignal: AbortSignal | undefined;
    let fastRuns = 0;
    const { registry } = registryWith(
      {
        name: 'hang',
        handler: (_args, ctx) => {
          seenSignal = ctx.signal;
          return new Promise((_resolve, reject) =>
            ctx.signal.addEventListener('abort', () => reject(new Error('stopped'))),
          );
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
    // A tool with side effects that timed out may have acted: not recoverable, and said so.
    assert.equal(result.error?.recoverable, false);
    assert.match(
      result.error?.message ?? '',
      /hang did not finish within 100 ms.*may or may not have taken effect/,
    );
    assert.equal(
      result.metadata.attempts,
      1,
      'a tool that is neither read-only nor idempotent is not retried',
    );
    assert.equal(seenSignal?.aborted, true, 'the handler’s signal is aborted at the deadline');
    const next = await following;
    assert.equal(next.success, true);
    assert.equal(fastRuns, 1);
    await waitFor(() => executor.active === 0, 2000, 'every slot free');
  });

  it('keeps the slot of a handler that ignores its signal, reports it stuck, and never exceeds the cap', async () => {
    let release: () => void = () => undefined;
    let running = 0;
    let most = 0;
    const { registry } = registryWith(
      {
        name: 'deaf',
        handler: () => {
          running += 1;
          most = Math.max(most, running);
          // Ignores its signal: only the test lets it go.
          return new Promise<string>((resolve) => {
            release = () => {
              running -= 1;
              resolve('late');
            };
          });
        },
      },
      {
        name: 'fast',
        handler: () => {
          running += 1;
          most = Math.max(most, running);
          running -= 1;
          return 'fast';
        },
      },
    );
    const executor = new Executor(registry, { concurrency: 1, timeoutMs: 50, stuckGraceMs: 50 });
    const result = await executor.execute({ id: 'd', name: 'deaf', arguments: {} });
    assert.equal(result.error?.code, 'TIMEOUT', 'the call answers at its deadline');
    const following = executor.execute({ id: 'f', name: 'fast', arguments: {} });
    await waitFor(() => executor.stuck === 1, 2000, 'the deaf call reported stuck');
    assert.equal(executor.active, 1, 'its slot stays taken');
    assert.equal(executor.pending, 1, 'the next call waits for the slot');
    release();
    assert.equal((await following).content, 'fast');
    assert.equal(most, 1, 'never two handlers at once with a cap of 1');
    await waitFor(() => executor.stuck === 0 && executor.active === 0, 2000, 'slot free');
  });

  it('retries a read-only tool that times out, up to the attempt limit', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'hang',
      readOnly: true,
      handler: (_args, ctx) => {
        runs += 1;
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new Error('stopped'))),
        );
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

describe('Executor output cap on failures', () => {
  // A tool's error (an MCP server's isError result with structuredContent) went into the note
  // whole, 9 MB past the cap, and data nested 100,000 deep overflowed the stack of the ledger
  // that recorded it, losing the call's result (review finding).
  it('bounds the message and data of an error as it bounds a result', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    const huge = 'x'.repeat(3 * 1024 * 1024);
    const { registry } = registryWith(
      {
        name: 'fails_big',
        handler: () => {
          throw new ToolError('EXECUTION_FAILED', `server said: ${huge}`, {
            data: { dump: huge },
          });
        },
      },
      {
        name: 'fails_deep',
        handler: () => {
          throw new ToolError('EXECUTION_FAILED', 'deep', { data: deep });
        },
      },
      {
        name: 'fails_small',
        handler: () => {
          throw new ToolError('EXECUTION_FAILED', 'small', { data: { exit_code: 3 } });
        },
      },
    );
    const executor = new Executor(registry);
    const big = await executor.execute({ id: 'b', name: 'fails_big', arguments: {} });
    const message = big.error?.message ?? '';
    assert.ok(Buffer.byteLength(message) < 300 * 1024, `${Buffer.byteLength(message)} bytes`);
    assert.match(message, /\[output truncated: \d+ of \d+ bytes over the 262144-byte cap/);
    assert.match(message, /\[structured data dropped: \d+ bytes, over the 262144-byte cap\]/);
    assert.equal(big.data, undefined);

    const nested = await executor.execute({ id: 'd', name: 'fails_deep', arguments: {} });
    assert.equal(nested.data, undefined);
    assert.match(
      nested.error?.message ?? '',
      /structured data dropped: not plain JSON, or nested too deep/,
    );
    // What records and renders a result walks it: it must be plain, shallow JSON now.
    assert.doesNotThrow(() => JSON.stringify(nested));

    const small = await executor.execute({ id: 's', name: 'fails_small', arguments: {} });
    assert.deepEqual([small.error?.message, small.data], ['small', { exit_code: 3 }]);
  });
});
