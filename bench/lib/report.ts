import { formatNumber } from './stats.ts';

/** One measured figure, as printed in the table and written to the JSON file. */
export interface Figure {
  /** Which sub-benchmark it belongs to, e.g. `latency`. */
  readonly suite: string;
  readonly name: string;
  /** The value; null when it could not be measured. */
  readonly value: number | null;
  readonly unit: string;
  /** The SPEC section 10 target, in words, when there is one. */
  readonly target?: string;
  /** Whether the target is met; undefined when there is no target. */
  readonly met?: boolean;
  /** The value divided by the matching raw-baseline figure (throughput) or the other way round. */
  readonly ratio?: number;
  readonly note?: string;
}

/** The outcome of one sub-benchmark. */
export interface SuiteResult {
  readonly suite: string;
  readonly figures: Figure[];
  /** The error message when it failed. */
  readonly error?: string;
  readonly seconds: number;
}

/**
 * Render the figures as a markdown table: figure, value, SPEC target, met, ratio to baseline.
 * @param results every sub-benchmark's outcome.
 */
export function renderTable(results: readonly SuiteResult[]): string {
  const rows: string[][] = [['figure', 'value', 'SPEC target', 'met', 'vs raw baseline']];
  for (const result of results) {
    for (const f of result.figures) {
      rows.push([
        `${f.suite}: ${f.name}`,
        f.value === null ? 'n/a' : `${formatNumber(f.value)} ${f.unit}`.trim(),
        f.target ?? '',
        f.met === undefined ? '' : f.met ? 'met' : '**not met**',
        f.ratio === undefined ? '' : `${formatNumber(f.ratio)}×`,
      ]);
    }
    if (result.error !== undefined) {
      rows.push([
        `${result.suite}: FAILED`,
        result.error.split('\n')[0]?.slice(0, 120) ?? '',
        '',
        '',
        '',
      ]);
    }
  }
  const widths = (rows[0] as string[]).map((_, c) =>
    Math.max(...rows.map((r) => (r[c] ?? '').length)),
  );
  const line = (r: string[]): string =>
    `| ${r.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(' | ')} |`;
  const rule = `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`;
  return [line(rows[0] as string[]), rule, ...rows.slice(1).map(line)].join('\n');
}

/**
 * Render each figure's note (how it was measured, caveats) as a bullet list.
 * @param results every sub-benchmark's outcome.
 */
export function renderNotes(results: readonly SuiteResult[]): string {
  const lines: string[] = [];
  for (const result of results) {
    for (const f of result.figures)
      if (f.note !== undefined) lines.push(`- ${f.suite}: ${f.name}: ${f.note}`);
  }
  return lines.join('\n');
}
