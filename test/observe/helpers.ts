import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import type { ToolResult } from '../../src/protocol/types.ts';

export { waitUntil as waitFor } from '../helpers/wait-for.ts';

/** A pino logger whose records land in `records`, parsed. */
export function captureLogger(level = 'debug'): {
  logger: Logger;
  records: Array<Record<string, unknown>>;
} {
  const records: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line) records.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, stream), records };
}

/** A result as the executor would emit it. */
export function makeResult(
  tool: string,
  status: ToolResult['status'],
  ms: number,
  code?: 'UNKNOWN_TOOL' | 'TIMEOUT' | 'INVALID_JSON' | 'INVALID_CALL',
): ToolResult {
  return {
    id: `call_${tool}_${ms}`,
    name: tool,
    success: status === 'success',
    status,
    content: status,
    error:
      status === 'success'
        ? null
        : { code: code ?? 'TIMEOUT', message: 'failed', recoverable: false },
    metadata: {
      execution_time_ms: ms,
      safety_level: 'safe',
      approved_by: 'auto',
      attempts: 1,
      cached: false,
      finished_at: new Date().toISOString(),
    },
  };
}

/** One sample of Prometheus text: name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parse Prometheus text exposition format into samples and `# TYPE` declarations; throws on a
 * line that is neither a comment nor a well-formed sample.
 */
export function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    // Prometheus parses values with Go's ParseFloat: NaN and Inf in any case (prom-client writes `Nan`).
    const raw = m[3]!.toLowerCase();
    const value =
      raw === '+inf' || raw === 'inf' ? Infinity : raw === '-inf' ? -Infinity : Number(raw);
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`bad value in: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { samples, types };
}

/** Value of the one sample with this name whose labels include `labels`, or undefined. */
export function sampleValue(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1)
    throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}
