import { performance } from 'node:perf_hooks';
import { parseNote } from '../../src/note/index.ts';
import type { BenchContext } from '../lib/context.ts';
import { nestedNote, typicalNote } from '../lib/parse-fixtures.ts';
import type { Figure } from '../lib/report.ts';

/** At least this many parses and this much time per case, after a warm-up. */
const MIN_RUNS = 5;
const MIN_MS = 1_000;
const SLOW_MS = 1_000;

/**
 * Parse cost: `parseNote` in this process on typical notes of 1 KB, 10 KB, 1 MB and on nested
 * worst cases, in ms per parse.
 * @param ctx the bench context.
 */
export async function runParseCost(ctx: BenchContext): Promise<Figure[]> {
  const minMs = ctx.quick ? MIN_MS / 2 : MIN_MS;
  const cases: { name: string; text: string }[] = [
    { name: '1 KB note', text: typicalNote(1024) },
    { name: '10 KB note', text: typicalNote(10 * 1024) },
    { name: '1 MB note', text: typicalNote(1024 * 1024) },
    { name: 'worst case 10 KB, nested 20 deep', text: nestedNote(10 * 1024, 20) },
    { name: 'worst case 100 KB, nested 60 deep', text: nestedNote(100 * 1024, 60) },
  ];
  const figures: Figure[] = [];
  for (const c of cases) {
    // The first parse checks the fixture and warms the JIT; a case that takes over a second is
    // reported from that one parse, so a slow parser cannot stretch the run by minutes.
    const t1 = performance.now();
    const first = parseNote(c.text);
    const firstMs = performance.now() - t1;
    if (first.calls.length === 0)
      throw new Error(`${c.name}: parseNote found no call (${first.invalid.length} invalid)`);
    let runs = 1;
    let ms = firstMs;
    if (firstMs < SLOW_MS) {
      runs = 0;
      const t0 = performance.now();
      // vaultd keeps recent parses (a note is parsed again, unchanged, when its results are
      // written back): a different text each run measures the parse, not that cache.
      while (runs < MIN_RUNS || performance.now() - t0 < minMs) {
        parseNote(`${c.text}\n<!-- run ${runs} -->\n`);
        runs++;
      }
      ms = (performance.now() - t0) / runs;
    }
    figures.push({
      suite: 'parse',
      name: `${c.name} (${(c.text.length / 1024).toFixed(0)} KB)`,
      value: ms,
      unit: 'ms/parse',
      note: `${runs === 1 ? '1 parse (cold: one parse took over a second)' : `${runs} parses`}; ${(c.text.length / 1024 / 1024 / (ms / 1000)).toFixed(1)} MB/s; ${first.calls.length} calls found`,
    });
    await new Promise((resolve) => setImmediate(resolve));
  }
  return figures;
}
