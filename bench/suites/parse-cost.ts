import { performance } from 'node:perf_hooks';
import { parseNote } from '../../src/note/index.ts';
import type { BenchContext } from '../lib/context.ts';
import {
  callsNote,
  listsNote,
  nestedNote,
  quotesNote,
  typicalNote,
} from '../lib/parse-fixtures.ts';
import type { Figure } from '../lib/report.ts';

/** At least this many parses and this much time per case, after a warm-up. */
const MIN_RUNS = 3;
const MIN_MS = 1_000;
const SLOW_MS = 1_000;

const KB = 1024;
const MB = 1024 * 1024;

const SHAPES: Record<string, (bytes: number) => string> = {
  prose: typicalNote,
  'deep quotes': (bytes) => quotesNote(bytes, 8),
  'nested lists': (bytes) => listsNote(bytes, 40),
  'calls only': callsNote,
  'quotes and lists 20 deep': (bytes) => nestedNote(bytes, 20),
};

/**
 * Parse cost: `parseNote` (front-matter, markdown-it's block parse, every call read) in this
 * process, per note shape and size (1 KB, 100 KB, 1 MB, 4 MB; 4 MB is over the default
 * `max_note_bytes` and stands for a raised cap), and the growth from 100 KB to 1 MB, which is 10
 * for a linear parser.
 * @param ctx the bench context.
 */
export async function runParseCost(ctx: BenchContext): Promise<Figure[]> {
  const minMs = ctx.quick ? MIN_MS / 2 : MIN_MS;
  const sizes = ctx.quick ? [KB, 100 * KB, MB] : [KB, 100 * KB, MB, 4 * MB];
  const figures: Figure[] = [];
  for (const [shape, make] of Object.entries(SHAPES)) {
    const bySize = new Map<number, number>();
    for (const bytes of sizes) {
      const text = make(bytes);
      const { ms, runs, calls } = measure(text, minMs);
      bySize.set(bytes, ms);
      const label = bytes >= MB ? `${bytes / MB} MB` : `${bytes / KB} KB`;
      const target =
        bytes === KB && shape === 'prose' ? '≤ 0.05 ms' : bytes === MB ? '≤ 500 ms' : undefined;
      const limit = bytes === KB && shape === 'prose' ? 0.05 : bytes === MB ? 500 : undefined;
      figures.push({
        suite: 'parse',
        name: `${shape}, ${label}`,
        value: ms,
        unit: 'ms/parse',
        ...(target === undefined ? {} : { target, met: ms <= (limit ?? 0) }),
        note: `${runs} parses; ${(text.length / MB / (ms / 1000)).toFixed(1)} MB/s; ${calls} calls found`,
      });
      await new Promise((resolve) => setImmediate(resolve));
    }
    const small = bySize.get(100 * KB);
    const large = bySize.get(MB);
    if (small !== undefined && large !== undefined) {
      const growth = large / small;
      figures.push({
        suite: 'parse',
        name: `${shape}: growth 100 KB → 1 MB`,
        value: growth,
        unit: '×',
        target: '≤ 12×',
        met: growth <= 12,
      });
    }
  }
  return figures;
}

function measure(text: string, minMs: number): { ms: number; runs: number; calls: number } {
  // The first parse checks the fixture and warms the JIT; a case that takes over a second is
  // reported from that one parse, so a slow parser cannot stretch the run by minutes.
  const t1 = performance.now();
  const first = parseNote(text);
  const firstMs = performance.now() - t1;
  if (first.calls.length === 0)
    throw new Error(`parseNote found no call (${first.invalid.length} invalid)`);
  if (firstMs >= SLOW_MS) return { ms: firstMs, runs: 1, calls: first.calls.length };
  let runs = 0;
  const t0 = performance.now();
  // vaultd keeps recent parses (a note is parsed again, unchanged, when its results are written
  // back): a different text each run measures the parse, not that cache.
  while (runs < MIN_RUNS || performance.now() - t0 < minMs) {
    parseNote(`${text}\n<!-- run ${runs} -->\n`);
    runs++;
  }
  return { ms: (performance.now() - t0) / runs, runs, calls: first.calls.length };
}
