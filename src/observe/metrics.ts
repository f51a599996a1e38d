import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EventBus } from './event-bus.ts';
import { silentLogger } from './logger.ts';

/** Where the lazily collected gauges read their values, at scrape time. */
export interface MetricsSources {
  /** Notes waiting to be processed. */
  queueDepth(): number;
  /** Number of notes per state folder, e.g. `{done: 12, failed: 1}`. */
  notesPerState(): Record<string, number>;
  /** Calls waiting for a human decision. */
  pendingApprovals(): number;
  /** Calls past their timeout whose handler has not stopped: their slots stay taken. */
  stuckCalls?(): number;
  /** Infrastructure conditions holding now (disk full, lock lost…), by code. */
  conditions?(): readonly { code: string }[];
}

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Where a failing source is reported; defaults to a silent logger. */
  readonly logger?: Logger;
  /** Collect prom-client's process metrics (prefixed `vaultd_`); defaults to true. */
  readonly defaultMetrics?: boolean;
  /** Distinct `tool` label values kept before others are counted as `_other`; defaults to 200. */
  readonly maxToolLabels?: number;
}

/** The daemon's metrics: a registry of its own and its Prometheus text. */
export interface Metrics {
  readonly registry: Registry;
  /** Content type of {@link Metrics.text}, for the HTTP response. */
  readonly contentType: string;
  /** The metrics in Prometheus text exposition format. */
  text(): Promise<string>;
  /** Stop listening to the bus. */
  close(): void;
}

/** Histogram buckets of call durations, in seconds: 1 ms to 60 s. */
export const DURATION_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

// Results whose tool is not a registered one (a made-up name, a block whose JSON or shape could
// not be read) share one label: the name is the agent's, or a placeholder.
const NO_TOOL_CODES = new Set(['UNKNOWN_TOOL', 'INVALID_JSON', 'INVALID_CALL']);

/**
 * Create the daemon's Prometheus metrics on a registry of their own, fed by the event bus and,
 * for gauges, read from `sources` at scrape time.
 * @param bus the daemon's event bus: `tool.result` and `note.moved` events are counted.
 * @param sources read when `/metrics` is scraped; a source that throws leaves its gauge unchanged.
 * @param options logger, default process metrics (on), tool label cap (200).
 */
export function createMetrics(
  bus: EventBus,
  sources: MetricsSources,
  options: MetricsOptions = {},
): Metrics {
  const logger = options.logger ?? silentLogger();
  const maxToolLabels = options.maxToolLabels ?? 200;
  const registry = new Registry();
  const registers = [registry];
  if (options.defaultMetrics ?? true)
    collectDefaultMetrics({ register: registry, prefix: 'vaultd_' });

  const read = <T>(name: string, source: () => T): T | undefined => {
    try {
      return source();
    } catch (err) {
      logger.warn({ err, metric: name }, 'metrics source failed');
      return undefined;
    }
  };

  const calls = new Counter({
    name: 'vaultd_tool_calls_total',
    help: 'Tool calls finished, by tool and result status.',
    labelNames: ['tool', 'status'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'vaultd_tool_call_duration_seconds',
    help: 'Execution time of tool calls, by tool.',
    labelNames: ['tool'] as const,
    buckets: [...DURATION_BUCKETS],
    registers,
  });
  const processed = new Counter({
    name: 'vaultd_notes_processed_total',
    help: 'Notes moved out of processing, by outcome (the state folder they went to).',
    labelNames: ['outcome'] as const,
    registers,
  });
  new Gauge({
    name: 'vaultd_queue_depth',
    help: 'Notes waiting to be processed.',
    registers,
    collect() {
      const value = read('vaultd_queue_depth', () => sources.queueDepth());
      if (value !== undefined) this.set(value);
    },
  });
  new Gauge({
    name: 'vaultd_notes',
    help: 'Notes per state folder.',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const counts = read('vaultd_notes', () => sources.notesPerState());
      if (counts === undefined) return;
      this.reset();
      for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
    },
  });
  new Gauge({
    name: 'vaultd_stuck_calls',
    help: 'Calls past their timeout or abort whose handler has not stopped; each keeps its slot.',
    registers,
    collect() {
      const value = read('vaultd_stuck_calls', () => sources.stuckCalls?.() ?? 0);
      if (value !== undefined) this.set(value);
    },
  });
  new Gauge({
    name: 'vaultd_condition',
    help: 'Infrastructure conditions being worked around (1 while one holds), by code.',
    labelNames: ['code'] as const,
    registers,
    collect() {
      const held = read('vaultd_condition', () => sources.conditions?.() ?? []);
      if (held === undefined) return;
      this.reset();
      for (const condition of held) this.set({ code: condition.code }, 1);
    },
  });
  new Gauge({
    name: 'vaultd_pending_approvals',
    help: 'Tool calls waiting for a human decision.',
    registers,
    collect() {
      const value = read('vaultd_pending_approvals', () => sources.pendingApprovals());
      if (value !== undefined) this.set(value);
    },
  });

  // Tool names come from notes that agents write; cap the label values so a stream of bogus
  // names cannot grow the registry without bound.
  const seenTools = new Set<string>();
  const toolLabel = (tool: string, unknown: boolean): string => {
    if (unknown) return '_unknown';
    if (seenTools.has(tool)) return tool;
    if (seenTools.size >= maxToolLabels) return '_other';
    seenTools.add(tool);
    return tool;
  };

  const offResult = bus.on('tool.result', ({ tool, result }) => {
    const label = toolLabel(tool, NO_TOOL_CODES.has(result.error?.code ?? ''));
    calls.inc({ tool: label, status: result.status });
    const ms = result.metadata.execution_time_ms;
    if (Number.isFinite(ms) && ms >= 0) duration.observe({ tool: label }, ms / 1000);
  });
  const offMoved = bus.on('note.moved', ({ state }) => {
    if (state !== 'in_progress') processed.inc({ outcome: state });
  });

  return {
    registry,
    contentType: registry.contentType,
    text: () => registry.metrics(),
    close() {
      offResult();
      offMoved();
    },
  };
}
