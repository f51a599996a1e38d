import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Executor } from '../../src/execute/index.ts';
import { ToolError } from '../../src/protocol/index.ts';
import type { ToolContext, ToolProgress, ToolResult } from '../../src/protocol/index.ts';
import { capturingLogger, delay, registryWith, waitFor } from './helpers.ts';

function assertResultShape(result: ToolResult): void {
  assert.equal(typeof result.content, 'string');
  assert.equal(result.success, result.status === 'success');
  assert.equal(result.error === null, result.success);
  assert.equal(typeof result.metadata.execution_time_ms, 'number');
  assert.ok(!Number.isNaN(Date.parse(result.metadata.finished_at)));
}

describe('Executor results', () => {
  it('names close tools for an unknown tool, without counting it in metrics', async () => {
    const { registry } = registryWith(
      { name: 'search_web', handler: () => 'x' },
      { name: 'send_notification', handler: () => 'x' },
    );
    const executor = new Executor(registry);
    const result = await executor.execute({ id: 'u', name: 'serch_web', arguments: {} });
    assertResultShape(result);
    assert.equal(result.id, 'u');
    assert.equal(result.error?.code, 'UNKNOWN_TOOL');
    assert.match(
      result.error?.message ?? '',
      /no tool named 'serch_web'; did you mean: search_web\?/,
    );
    assert.equal(result.metadata.safety_level, null);
    const far = await executor.execute({ id: 'v', name: 'zzz', arguments: {} });
    assert.match(far.error?.message ?? '', /available tools: search_web, send_notification/);
    assert.deepEqual(executor.metrics(), {});
  });

  it('gives INVALID_PARAMS naming the parameter, and does not run the handler', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'search_web',
      parameters: { query: { type: 'string' }, num_results: { type: 'integer', maximum: 20 } },
      required: ['query'],
      handler: () => {
        runs += 1;
        return 'x';
      },
    });
    const result = await new Executor(registry).execute({
      id: 'i',
      name: 'search_web',
      arguments: { query: 'q', num_results: 50 },
    });
    assertResultShape(result);
    assert.equal(result.error?.code, 'INVALID_PARAMS');
    assert.equal(
      result.error?.message,
      "invalid parameters for search_web: parameter 'num_results' must be an integer ≤ 20, got 50",
    );
    assert.equal(runs, 0);
  });

  it('check() validates without running', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'search_web',
      parameters: { query: { type: 'string' }, num_results: { type: 'integer', default: 5 } },
      required: ['query'],
      handler: () => {
        runs += 1;
        return 'x';
      },
    });
    const executor = new Executor(registry);
    const ok = executor.check({ id: '1', name: 'search_web', arguments: { query: 'q' } });
    assert.ok(ok.ok);
    assert.deepEqual(ok.args, { query: 'q', num_results: 5 });
    const unknown = executor.check({ id: '2', name: 'nope', arguments: {} });
    assert.equal(unknown.ok ? '' : unknown.error.code, 'UNKNOWN_TOOL');
    const invalid = executor.check({ id: '3', name: 'search_web', arguments: {} });
    assert.equal(invalid.ok ? '' : invalid.error.code, 'INVALID_PARAMS');
    assert.equal(runs, 0);
  });

  it('hands the handler its context and forwards progress', async () => {
    let seen: ToolContext | undefined;
    const { registry } = registryWith({
      name: 'work',
      handler: (_args, ctx) => {
        seen = ctx;
        ctx.progress({ message: 'half', fraction: 0.5 });
        return undefined;
      },
    });
    const progress: ToolProgress[] = [];
    const executor = new Executor(registry, {
      vault: '/vault',
      toolConfig: (name) => ({ for: name }),
    });
    const result = await executor.execute(
      { id: 'w1', name: 'work', arguments: {} },
      { note: 'Needs_Action/a.md', onProgress: (p) => progress.push(p) },
    );
    assertResultShape(result);
    assert.equal(result.content, '(no output: the tool returned nothing)');
    assert.equal(seen?.vault, '/vault');
    assert.equal(seen?.note, 'Needs_Action/a.md');
    assert.equal(seen?.callId, 'w1');
    assert.deepEqual(seen?.config, { for: 'work' });
    assert.ok(Object.isFrozen(seen?.config));
    assert.deepEqual(progress, [{ message: 'half', fraction: 0.5 }]);
  });

  it('turns a synchronous throw and a malformed call into results', async () => {
    const { registry } = registryWith({
      name: 'boom',
      handler: () => {
        throw new Error('sync boom');
      },
    });
    const executor = new Executor(registry);
    const result = await executor.execute({ id: 'b', name: 'boom', arguments: {} });
    assertResultShape(result);
    assert.equal(result.error?.message, 'sync boom');
    const weird = await executor.execute(null as never);
    assertResultShape(weird);
    assert.equal(weird.error?.code, 'INVALID_CALL');
  });
});

describe('Executor hooks', () => {
  it('calls before, the handler, then after on success; error before after on failure', async () => {
    const order: string[] = [];
    const { registry } = registryWith(
      { name: 'good', handler: () => void order.push('handler') },
      {
        name: 'bad',
        handler: () => {
          order.push('handler');
          throw new ToolError('EXECUTION_FAILED', 'broken');
        },
      },
    );
    const executor = new Executor(registry, {
      hooks: {
        before: (call, tool) => void order.push(`before:${call.id}:${tool.name}`),
        after: async (call, result) => {
          await delay(1);
          order.push(`after:${call.id}:${result.status}`);
        },
        error: (call, error) => void order.push(`error:${call.id}:${(error as Error).message}`),
      },
    });
    await executor.execute({ id: 'g', name: 'good', arguments: {} });
    await executor.execute({ id: 'b', name: 'bad', arguments: {} });
    await executor.execute({ id: 'u', name: 'unknown', arguments: {} });
    assert.deepEqual(order, [
      'before:g:good',
      'handler',
      'after:g:success',
      'before:b:bad',
      'handler',
      'error:b:broken',
      'after:b:error',
      "error:u:no tool named 'unknown'; available tools: bad, good",
      'after:u:error',
    ]);
  });

  it('logs a failing hook and still returns the result', async () => {
    const { logger, lines } = capturingLogger();
    const { registry } = registryWith({ name: 'good', handler: () => 'fine' });
    const executor = new Executor(registry, {
      logger,
      hooks: {
        before: () => {
          throw new Error('before broke');
        },
        after: async () => {
          throw new Error('after broke');
        },
      },
    });
    const result = await executor.execute({ id: 'g', name: 'good', arguments: {} });
    assert.equal(result.success, true);
    assert.equal(result.content, 'fine');
    const hookErrors = lines.filter((l) => l['msg'] === 'executor hook failed');
    assert.deepEqual(
      hookErrors.map((l) => l['hook']),
      ['before', 'after'],
    );
  });
});

describe('Executor intent recording', () => {
  it('records the intent before running a tool with side effects, and not for a read-only one', async () => {
    const order: string[] = [];
    const { registry } = registryWith(
      { name: 'write', handler: () => void order.push('handler:write') },
      { name: 'read', readOnly: true, handler: () => void order.push('handler:read') },
    );
    const executor = new Executor(registry);
    const onIntent = async (call: { id: string }) => {
      await delay(5);
      order.push(`intent:${call.id}`);
    };
    await executor.execute({ id: 'w', name: 'write', arguments: {} }, { onIntent });
    await executor.execute({ id: 'r', name: 'read', arguments: {} }, { onIntent });
    assert.deepEqual(order, ['intent:w', 'handler:write', 'handler:read']);
  });

  it('does not run the handler when recording the intent fails', async () => {
    let runs = 0;
    const { registry } = registryWith({
      name: 'write',
      idempotent: true,
      handler: () => {
        runs += 1;
        return 'x';
      },
    });
    const result = await new Executor(registry).execute(
      { id: 'w', name: 'write', arguments: {} },
      {
        onIntent: async () => {
          throw new Error('ENOSPC: disk full');
        },
      },
    );
    assert.equal(result.error?.code, 'EXECUTION_FAILED');
    assert.match(result.error?.message ?? '', /ENOSPC: disk full/);
    assert.equal(result.metadata.attempts, 0);
    assert.equal(runs, 0);
  });
});

describe('Executor shutdown', () => {
  it('interrupts a running call when the signal aborts, and aborts the handler’s signal', async () => {
    let handlerSignal: AbortSignal | undefined;
    const { registry } = registryWith({
      name: 'long',
      handler: (_args, ctx) => {
        handlerSignal = ctx.signal;
        // A well-behaved handler stops when its signal aborts.
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))),
        );
      },
    });
    const executor = new Executor(registry, { timeoutMs: 60_000 });
    const shutdown = new AbortController();
    const pending = executor.execute(
      { id: 'l', name: 'long', arguments: {} },
      { signal: shutdown.signal },
    );
    await waitFor(() => handlerSignal !== undefined, 2000, 'the handler to start');
    shutdown.abort();
    const result = await pending;
    assertResultShape(result);
    assert.equal(result.status, 'interrupted');
    assert.equal(result.error?.code, 'INTERRUPTED');
    assert.equal(result.metadata.attempts, 1);
    assert.equal(handlerSignal?.aborted, true);
    await waitFor(
      () => executor.active === 0,
      2000,
      'the slot to be free once the handler stopped',
    );
  });

  it('never starts calls that are queued or not yet begun when the signal aborts', async () => {
    const started: string[] = [];
    const { registry } = registryWith({
      name: 'long',
      handler: (args, ctx) => {
        started.push(String(args['n']));
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))),
        );
      },
      parameters: { n: { type: 'integer' } },
    });
    const executor = new Executor(registry, { concurrency: 1, timeoutMs: 60_000 });
    const shutdown = new AbortController();
    const options = { signal: shutdown.signal };
    const first = executor.execute({ id: '1', name: 'long', arguments: { n: 1 } }, options);
    const queued = executor.execute({ id: '2', name: 'long', arguments: { n: 2 } }, options);
    await waitFor(
      () => started.length === 1 && executor.pending === 1,
      2000,
      'one running, one queued',
    );
    shutdown.abort();
    const results = await Promise.all([first, queued]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['interrupted', 'interrupted'],
    );
    assert.equal(results[1]?.metadata.attempts, 0);
    const late = await executor.execute({ id: '3', name: 'long', arguments: { n: 3 } }, options);
    assert.equal(late.status, 'interrupted');
    await waitFor(() => executor.pending === 0, 2000, 'the queue to drain');
    assert.deepEqual(started, ['1']);
  });
});

describe('Executor metrics', () => {
  it('counts outcomes per tool and reports latency percentiles of runs', async () => {
    const { registry } = registryWith(
      {
        name: 'work',
        parameters: { fail: { type: 'boolean' } },
        handler: async (args) => {
          await delay(20);
          if (args['fail'] === true) throw new Error('failed');
          return 'ok';
        },
      },
      { name: 'hang', handler: () => new Promise(() => {}) },
      { name: 'danger', safety: 'dangerous', handler: () => 'x' },
    );
    const executor = new Executor(registry, { timeoutMs: 60 });
    await executor.executeAll([
      { id: '1', name: 'work', arguments: {} },
      { id: '2', name: 'work', arguments: {} },
      { id: '3', name: 'work', arguments: { fail: true } },
      { id: '4', name: 'work', arguments: { fail: 'yes' } },
      { id: '5', name: 'hang', arguments: {} },
      { id: '6', name: 'danger', arguments: {} },
    ]);
    const metrics = executor.metrics();
    const work = metrics['work'];
    assert.ok(work !== undefined);
    assert.equal(work.calls, 4);
    assert.equal(work.successes, 2);
    assert.equal(work.errors, 2);
    assert.equal(work.timeouts, 0);
    assert.ok(work.latencyP50Ms >= 15, `p50 ${work.latencyP50Ms}`);
    assert.ok(work.latencyP95Ms >= work.latencyP50Ms);
    assert.equal(metrics['hang']?.timeouts, 1);
    assert.equal(metrics['hang']?.errors, 1);
    assert.equal(metrics['danger']?.rejections, 1);
    assert.equal(metrics['danger']?.latencyP50Ms, 0, 'a call that never ran has no latency');
  });
});

describe('Executor options', () => {
  it('throws at construction for a bad option, quoting it', () => {
    const { registry } = registryWith({ name: 'x', handler: () => 'x' });
    assert.throws(
      () => new Executor(registry, { concurrency: 0 }),
      /concurrency must be an integer ≥ 1, got 0/,
    );
    assert.throws(() => new Executor(registry, { timeoutMs: -5 }), /timeoutMs must be .* got -5/);
    assert.throws(
      () => new Executor(registry, { rateLimits: { x: { max: 0, windowMs: 1 } } }),
      /rateLimits\.x must be/,
    );
  });
});
