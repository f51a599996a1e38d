import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { register as globalRegister } from 'prom-client';
import { EventBus } from '../../src/observe/event-bus.ts';
import { createMetrics, type MetricsSources } from '../../src/observe/metrics.ts';
import { captureLogger, makeResult, parsePrometheus, sampleValue } from './helpers.ts';

const sources = (over: Partial<MetricsSources> = {}): MetricsSources => ({
  queueDepth: () => 4,
  notesPerState: () => ({ done: 12, failed: 1, in_progress: 2 }),
  pendingApprovals: () => 3,
  ...over,
});

function emitResult(
  bus: EventBus,
  tool: string,
  status: 'success' | 'error',
  ms: number,
  code?: 'UNKNOWN_TOOL' | 'INVALID_JSON' | 'INVALID_CALL',
): void {
  bus.emit('tool.result', {
    note: 'n.md',
    callId: `c${ms}`,
    tool,
    result: makeResult(tool, status, ms, code),
  });
}

describe('createMetrics', () => {
  it('counts tool calls by tool and status and observes their durations', async () => {
    const bus = new EventBus();
    const metrics = createMetrics(bus, sources(), { defaultMetrics: false });
    emitResult(bus, 'search_web', 'success', 20);
    emitResult(bus, 'search_web', 'success', 400);
    emitResult(bus, 'search_web', 'error', 30_000);
    emitResult(bus, 'read_file', 'success', 2);
    const { samples, types } = parsePrometheus(await metrics.text());
    assert.equal(types.get('vaultd_tool_calls_total'), 'counter');
    assert.equal(types.get('vaultd_tool_call_duration_seconds'), 'histogram');
    assert.equal(
      sampleValue(samples, 'vaultd_tool_calls_total', { tool: 'search_web', status: 'success' }),
      2,
    );
    assert.equal(
      sampleValue(samples, 'vaultd_tool_calls_total', { tool: 'search_web', status: 'error' }),
      1,
    );
    assert.equal(
      sampleValue(samples, 'vaultd_tool_calls_total', { tool: 'read_file', status: 'success' }),
      1,
    );
    const bucket = (le: string) =>
      sampleValue(samples, 'vaultd_tool_call_duration_seconds_bucket', { tool: 'search_web', le });
    assert.equal(bucket('0.001'), 0);
    assert.equal(bucket('0.025'), 1);
    assert.equal(bucket('0.5'), 2);
    assert.equal(bucket('30'), 3);
    assert.equal(bucket('60'), 3);
    assert.equal(bucket('+Inf'), 3);
    assert.equal(
      sampleValue(samples, 'vaultd_tool_call_duration_seconds_count', { tool: 'search_web' }),
      3,
    );
    const sum =
      sampleValue(samples, 'vaultd_tool_call_duration_seconds_sum', { tool: 'search_web' }) ?? 0;
    assert.ok(Math.abs(sum - 30.42) < 1e-9, `sum ${sum}`);
  });

  it('reads gauges from the sources at scrape time', async () => {
    const bus = new EventBus();
    let depth = 4;
    let states: Record<string, number> = { done: 12, failed: 1 };
    const metrics = createMetrics(
      bus,
      sources({ queueDepth: () => depth, notesPerState: () => states }),
      { defaultMetrics: false },
    );
    const first = parsePrometheus(await metrics.text());
    let samples = first.samples;
    assert.equal(first.types.get('vaultd_queue_depth'), 'gauge');
    assert.equal(sampleValue(samples, 'vaultd_queue_depth'), 4);
    assert.equal(sampleValue(samples, 'vaultd_pending_approvals'), 3);
    assert.equal(sampleValue(samples, 'vaultd_notes', { state: 'done' }), 12);
    depth = 9;
    states = { done: 13 };
    ({ samples } = parsePrometheus(await metrics.text()));
    assert.equal(sampleValue(samples, 'vaultd_queue_depth'), 9);
    assert.equal(sampleValue(samples, 'vaultd_notes', { state: 'done' }), 13);
    assert.equal(
      sampleValue(samples, 'vaultd_notes', { state: 'failed' }),
      undefined,
      'a state that vanished is gone',
    );
  });

  it('counts processed notes by outcome, not the move back into processing', async () => {
    const bus = new EventBus();
    const metrics = createMetrics(bus, sources(), { defaultMetrics: false });
    const move = (state: string) =>
      bus.emit('note.moved', { note: 'n.md', from: 'x', to: 'y', state });
    move('done');
    move('done');
    move('failed');
    move('in_progress');
    const { samples, types } = parsePrometheus(await metrics.text());
    assert.equal(types.get('vaultd_notes_processed_total'), 'counter');
    assert.equal(sampleValue(samples, 'vaultd_notes_processed_total', { outcome: 'done' }), 2);
    assert.equal(sampleValue(samples, 'vaultd_notes_processed_total', { outcome: 'failed' }), 1);
    assert.equal(
      sampleValue(samples, 'vaultd_notes_processed_total', { outcome: 'in_progress' }),
      undefined,
    );
  });

  it('bounds the tool label: unknown tools and unreadable calls share one label and names beyond the cap count as _other', async () => {
    const bus = new EventBus();
    const metrics = createMetrics(bus, sources(), { defaultMetrics: false, maxToolLabels: 2 });
    emitResult(bus, 'no_such_tool', 'error', 1, 'UNKNOWN_TOOL');
    emitResult(bus, 'made_up', 'error', 1, 'UNKNOWN_TOOL');
    emitResult(bus, 'unknown', 'error', 1, 'INVALID_JSON');
    emitResult(bus, 'some_tool', 'error', 1, 'INVALID_CALL');
    emitResult(bus, 'a', 'success', 1);
    emitResult(bus, 'b', 'success', 1);
    emitResult(bus, 'c', 'success', 1);
    emitResult(bus, 'a', 'success', 1);
    const { samples } = parsePrometheus(await metrics.text());
    const tools = new Set(
      samples.filter((s) => s.name === 'vaultd_tool_calls_total').map((s) => s.labels['tool']),
    );
    assert.deepEqual([...tools].sort(), ['_other', '_unknown', 'a', 'b']);
    assert.equal(
      sampleValue(samples, 'vaultd_tool_calls_total', { tool: '_unknown', status: 'error' }),
      4,
    );
    assert.equal(
      sampleValue(samples, 'vaultd_tool_calls_total', { tool: 'a', status: 'success' }),
      2,
    );
  });

  it('includes process metrics prefixed vaultd_ and stays off the global registry', async () => {
    const bus = new EventBus();
    const metrics = createMetrics(bus, sources());
    const text = await metrics.text();
    const { samples } = parsePrometheus(text);
    assert.ok(sampleValue(samples, 'vaultd_process_cpu_user_seconds_total') !== undefined);
    assert.ok((sampleValue(samples, 'vaultd_process_resident_memory_bytes') ?? 0) > 0);
    assert.ok(
      samples.every((s) => s.name.startsWith('vaultd_')),
      'every metric is prefixed',
    );
    assert.match(metrics.contentType, /^text\/plain; version=0\.0\.4/);
    assert.doesNotMatch(await globalRegister.metrics(), /vaultd_/);
  });

  it('a throwing source is logged and does not break the scrape', async () => {
    const { logger, records } = captureLogger();
    const bus = new EventBus();
    const metrics = createMetrics(
      bus,
      sources({
        queueDepth: () => {
          throw new Error('queue gone');
        },
      }),
      { defaultMetrics: false, logger },
    );
    const { samples } = parsePrometheus(await metrics.text());
    assert.equal(sampleValue(samples, 'vaultd_pending_approvals'), 3);
    assert.ok(
      records.some(
        (r) => r['msg'] === 'metrics source failed' && r['metric'] === 'vaultd_queue_depth',
      ),
    );
  });

  it('close() stops counting bus events', async () => {
    const bus = new EventBus();
    const metrics = createMetrics(bus, sources(), { defaultMetrics: false });
    emitResult(bus, 'a', 'success', 1);
    metrics.close();
    emitResult(bus, 'a', 'success', 1);
    const { samples } = parsePrometheus(await metrics.text());
    assert.equal(
      sampleValue(samples, 'vaultd_tool_calls_total', { tool: 'a', status: 'success' }),
      1,
    );
    assert.equal(bus.listenerCount, 0);
  });
});
