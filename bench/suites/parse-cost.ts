import { performance } from 'node:perf_hooks';
import type MarkdownIt from 'markdown-it';
import type { parseNote as ParseNote } from '../../src/note/index.ts';
import { importBundled } from '../lib/bundled.ts';
import type { BenchContext } from '../lib/context.ts';
import {
  callsNote,
  definitionsNote,
  lazyNote,
  listsNote,
  markersNote,
  nestedNote,
  quotesNote,
  typicalNote,
} from '../lib/parse-fixtures.ts';
import type { Figure } from '../lib/report.ts';

/** At least this many parses and this much time per case, after a warm-up. */
const MIN_RUNS = 3;
const MIN_MS = 1_000;
const SLOW_MS = 1_000;
/** Parses are timed in batches of at least this long (one parse when a parse takes longer). */
const BATCH_MS = 5;

const KB = 1024;
const MB = 1024 * 1024;

const SHAPES: Record<string, (bytes: number) => string> = {
  prose: typicalNote,
  'deep quotes': (bytes) => quotesNote(bytes, 8),
  'nested lists': (bytes) => listsNote(bytes, 40),
  'calls only': callsNote,
  'quotes and lists 20 deep': (bytes) => nestedNote(bytes, 20),
  'lazy lines under 500 quotes': (bytes) => lazyNote(bytes, 500),
  'link reference definitions': definitionsNote,
  'list markers on one line': markersNote,
};

/**
 * Parse cost: `parseNote` (front-matter, markdown-it's block parse, every call read) in this
 * process, bundled as `npm run build` bundles the daemon, per note shape and size (1 KB, 100 KB, 1 MB, 4 MB; 4 MB is over the default
 * `max_note_bytes` and stands for a raised cap), and the growth from 100 KB to 1 MB, which is 10
 * for a linear parser.
 * @param ctx the bench context.
 */
export async function runParseCost(ctx: BenchContext): Promise<Figure[]> {
  const minMs = ctx.quick ? MIN_MS / 2 : MIN_MS;
  const { parseNote } = await importBundled<{ parseNote: typeof ParseNote }>('src/note/index.ts');
  const sizes = ctx.quick ? [KB, 100 * KB, MB] : [KB, 100 * KB, MB, 4 * MB];
  const figures: Figure[] = [];
  // The same-run reference for a small note: a stock markdown-it's block parse of the same text
  // (what the issue quoted at 0.02 ms for 1 KB), so a figure can be read against this machine.
  // A copy of the library of its own (a module URL of its own), so this parse neither warms nor
  // shapes the code of the copy vaultd loads (its reference rule runs for the scanner).
  const { default: StockMarkdownIt } = (await import(
    `${import.meta.resolve('markdown-it')}?stock-reference`
  )) as { default: typeof MarkdownIt };
  const stock = new StockMarkdownIt('commonmark', { html: true });
  const stockParse = (text: string): number => {
    const tokens: unknown[] = [];
    stock.block.parse(text, stock, {}, tokens as never);
    return tokens.length;
  };
  for (const [shape, make] of Object.entries(SHAPES)) {
    const texts = new Map(sizes.map((bytes) => [bytes, make(bytes)]));
    const timed = new Map<number, Timing>();
    // Measured in pairs, batch for batch, so that both sides of a ratio see the same moments of
    // the machine (its speed moves by 2× within seconds here): 1 KB against the stock parse,
    // 100 KB against 1 MB (the growth). 4 MB alone.
    const small = texts.get(KB) as string;
    const [smallTiming, stockTiming] = measureTogether(
      [
        { parse: parseNote, text: small },
        { parse: stockParse, text: small },
      ],
      minMs,
    ) as [Timing, Timing];
    timed.set(KB, smallTiming);
    const reference = stockTiming.ms;
    const pair = measureTogether(
      [100 * KB, MB].map((bytes) => ({ parse: parseNote, text: texts.get(bytes) as string })),
      minMs,
    );
    timed.set(100 * KB, pair[0] as Timing);
    timed.set(MB, pair[1] as Timing);
    if (texts.has(4 * MB)) {
      timed.set(
        4 * MB,
        measureTogether(
          [{ parse: parseNote, text: texts.get(4 * MB) as string }],
          minMs,
        )[0] as Timing,
      );
    }
    for (const bytes of sizes) {
      const text = texts.get(bytes) as string;
      const { ms, runs, calls } = timed.get(bytes) as Timing;
      const label = bytes >= MB ? `${bytes / MB} MB` : `${bytes / KB} KB`;
      const target =
        bytes === KB && shape === 'prose' ? '≤ 0.05 ms' : bytes === MB ? '≤ 500 ms' : undefined;
      const limit = bytes === KB && shape === 'prose' ? 0.05 : bytes === MB ? 500 : undefined;
      const stockNote =
        bytes === KB
          ? `; a stock markdown-it's block parse of the same text ${reference.toFixed(3)} ms, timed batch for batch with it (the ratio is to it)`
          : '';
      figures.push({
        suite: 'parse',
        name: `${shape}, ${label}`,
        value: ms,
        unit: 'ms/parse',
        ...(target === undefined ? {} : { target, met: ms <= (limit ?? 0) }),
        ...(bytes === KB ? { ratio: ms / reference } : {}),
        note: `median of batches over ${runs} parses; ${(text.length / MB / (ms / 1000)).toFixed(1)} MB/s; ${calls} calls found${stockNote}`,
      });
    }
    await new Promise((resolve) => setImmediate(resolve));
    const growth = (timed.get(MB) as Timing).ms / (timed.get(100 * KB) as Timing).ms;
    figures.push({
      suite: 'parse',
      name: `${shape}: growth 100 KB → 1 MB`,
      value: growth,
      unit: '×',
      target: '≤ 12×',
      met: growth <= 12,
      note: '100 KB and 1 MB parsed in alternating batches',
    });
  }
  return figures;
}

interface Timing {
  readonly ms: number;
  readonly runs: number;
  /** Calls the parse found (-1 for the stock parse, which finds none). */
  readonly calls: number;
}

interface Case {
  readonly parse: typeof ParseNote | ((text: string) => number);
  readonly text: string;
}

/**
 * Time several parses in turn, one batch of each per round, for about `minMs` each; the median
 * batch of each (a garbage collection or a descheduling lands in one batch only).
 */
function measureTogether(cases: readonly Case[], minMs: number): Timing[] {
  // The first parse checks the fixture; a case that takes over a second is reported from that
  // one parse, so a slow parser cannot stretch the run by minutes.
  const states = cases.map((c) => {
    const t1 = performance.now();
    const first = c.parse(c.text);
    const firstMs = performance.now() - t1;
    const calls = typeof first === 'number' ? -1 : first.calls.length;
    if (typeof first !== 'number' && calls === 0)
      throw new Error(`parseNote found no call (${first.invalid.length} invalid)`);
    return {
      ...c,
      firstMs,
      calls,
      runs: 0,
      measured: 0,
      perRun: [] as number[],
      perBatch: Math.max(1, Math.ceil(BATCH_MS / Math.max(firstMs, 0.001))),
    };
  });
  const live = states.filter((s) => s.firstMs < SLOW_MS);
  // vaultd keeps recent parses (a note is parsed again, unchanged, when its results are written
  // back): a different text each run measures the parse, not that cache. Each text is made
  // before it is timed, and made as the daemon gets a note's text, decoded from the file's bytes
  // (one flat string): a text joined from two (`a + b`) is a tree that the parse's first look
  // copies into one string, and the copy of 1 MB into fresh memory cost 0.6 ms, six times what
  // ten copies of 100 KB cost (bench/README.md, item 42).
  const fresh = (s: (typeof states)[number]): string =>
    Buffer.from(`${s.text}\n<!-- run ${s.runs++} -->\n`).toString();
  // Warm the JIT for a quarter of the time, then time rounds of one batch per case.
  const budget = minMs * live.length;
  const warmUntil = performance.now() + budget / 4;
  const warmMs = live.map(() => 0);
  const warmRuns = live.map(() => 0);
  while (live.some((s) => s.runs < MIN_RUNS) || performance.now() < warmUntil) {
    for (const [i, s] of live.entries()) {
      const text = fresh(s);
      const w0 = performance.now();
      s.parse(text);
      warmMs[i] = (warmMs[i] as number) + performance.now() - w0;
      warmRuns[i] = (warmRuns[i] as number) + 1;
    }
  }
  // Batches sized from the warm-up's parses: sized from the first parse alone (compiling the
  // parser as it goes, 1–3 ms for a 1 KB note) a batch of a small note was 2–5 parses, most of
  // them run cold after the other case's batch.
  for (const [i, s] of live.entries()) {
    const perParse = (warmMs[i] as number) / Math.max(1, warmRuns[i] as number);
    s.perBatch = Math.max(1, Math.ceil(BATCH_MS / Math.max(perParse, 0.001)));
  }
  const t0 = performance.now();
  while (live.some((s) => s.perRun.length < MIN_RUNS) || performance.now() - t0 < budget) {
    for (const s of live) {
      const texts = Array.from({ length: s.perBatch }, () => fresh(s));
      const b0 = performance.now();
      for (const text of texts) s.parse(text);
      s.perRun.push((performance.now() - b0) / s.perBatch);
      s.measured += s.perBatch;
    }
  }
  return states.map((s) => {
    if (s.firstMs >= SLOW_MS) return { ms: s.firstMs, runs: 1, calls: s.calls };
    const sorted = [...s.perRun].sort((a, b) => a - b);
    return { ms: sorted[Math.floor(sorted.length / 2)] ?? 0, runs: s.measured, calls: s.calls };
  });
}
