import type { ToolResult } from '../protocol/types.ts';

/** Figures per tool since the executor started. */
export interface ToolMetrics {
  /** Results produced for this tool (every outcome, cache hits included). */
  readonly calls: number;
  readonly successes: number;
  /** Results with status `error` (timeouts, rate limits and invalid parameters included). */
  readonly errors: number;
  /** Results with status `rejected` (denied by a human, or no approval possible). */
  readonly rejections: number;
  /** Results with code `TIMEOUT`. */
  readonly timeouts: number;
  /** Results with status `interrupted`. */
  readonly interruptions: number;
  readonly cacheHits: number;
  /** Median execution time of calls whose handler ran, over the recent window; 0 before any. */
  readonly latencyP50Ms: number;
  /** 95th percentile of the same. */
  readonly latencyP95Ms: number;
}

/** How many recent latencies each tool keeps for its percentiles. */
export const LATENCY_WINDOW = 1000;

class Counter {
  calls = 0;
  successes = 0;
  errors = 0;
  rejections = 0;
  timeouts = 0;
  interruptions = 0;
  cacheHits = 0;
  readonly latencies: number[] = [];
  next = 0;
}

/** Per-tool counters and a bounded ring of recent latencies. */
export class MetricsRecorder {
  readonly #tools = new Map<string, Counter>();

  /**
   * Count one result.
   * @param result the result returned for a registered tool.
   * @param ran whether the handler ran, so its time counts towards latency.
   */
  record(result: ToolResult, ran: boolean): void {
    let counter = this.#tools.get(result.name);
    if (counter === undefined) {
      counter = new Counter();
      this.#tools.set(result.name, counter);
    }
    counter.calls += 1;
    if (result.metadata.cached) counter.cacheHits += 1;
    if (result.status === 'success') counter.successes += 1;
    else if (result.status === 'error') counter.errors += 1;
    else if (result.status === 'rejected') counter.rejections += 1;
    else counter.interruptions += 1;
    if (result.error?.code === 'TIMEOUT') counter.timeouts += 1;
    if (ran) {
      const ms = result.metadata.execution_time_ms;
      if (counter.latencies.length < LATENCY_WINDOW) counter.latencies.push(ms);
      else counter.latencies[counter.next] = ms;
      counter.next = (counter.next + 1) % LATENCY_WINDOW;
    }
  }

  /** A snapshot of every tool's figures, by tool name. */
  snapshot(): Record<string, ToolMetrics> {
    const out: Record<string, ToolMetrics> = {};
    for (const [name, c] of this.#tools) {
      const sorted = [...c.latencies].sort((a, b) => a - b);
      out[name] = {
        calls: c.calls,
        successes: c.successes,
        errors: c.errors,
        rejections: c.rejections,
        timeouts: c.timeouts,
        interruptions: c.interruptions,
        cacheHits: c.cacheHits,
        latencyP50Ms: percentile(sorted, 0.5),
        latencyP95Ms: percentile(sorted, 0.95),
      };
    }
    return out;
  }
}

/** Nearest-rank percentile of sorted values; 0 for none. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[rank - 1] ?? 0;
}
