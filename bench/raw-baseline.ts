// The raw file-system baseline (issue 6, item 1): per note only the work no note processor can
// skip: read it, write the text with a result appended to a temp file, fsync, rename it over the
// note, rename the note into Done/. A plain Node script with no vaultd code, run as its own
// process with the daemon's thread-pool size, so both meet the same file system on equal terms.
//
// Usage: node --import tsx bench/raw-baseline.ts <vault> <concurrency> [sequentialSample]
// Prints one JSON line: {notes, ms, sequential: {notes, ms_per_note_p50, ms_per_note_p95}}.
import { open, readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

// About the size of the result section vaultd appends for a bench_echo call.
const APPENDED = `\n## Tool Results\n\n> [!success] bench_echo\n> echo\n\n${'x'.repeat(560)}\n`;

async function processOne(inbox: string, done: string, name: string): Promise<void> {
  const path = join(inbox, name);
  const text = await readFile(path, 'utf8');
  const temp = join(inbox, `.${name}.tmp`);
  const handle = await open(temp, 'wx');
  await handle.writeFile(text + APPENDED, 'utf8');
  await handle.sync();
  await handle.close();
  await rename(temp, path);
  await rename(path, join(done, name));
}

async function main(): Promise<void> {
  const [vault, concurrencyArg, sampleArg] = process.argv.slice(2);
  if (vault === undefined)
    throw new Error('usage: raw-baseline.ts <vault> <concurrency> [sequentialSample]');
  const concurrency = Number(concurrencyArg ?? 40);
  const sample = Number(sampleArg ?? 0);
  const inbox = join(vault, 'Needs_Action');
  const done = join(vault, 'Done');
  const names = (await readdir(inbox)).filter((n) => n.endsWith('.md')).sort();

  // One note at a time first (the floor under a single note's latency), then the rest in parallel.
  const perNote: number[] = [];
  for (const name of names.slice(0, sample)) {
    const t0 = performance.now();
    await processOne(inbox, done, name);
    perNote.push(performance.now() - t0);
  }
  const rest = names.slice(sample);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, rest.length) }, async () => {
      while (next < rest.length) await processOne(inbox, done, rest[next++] as string);
    }),
  );
  const ms = performance.now() - t0;
  perNote.sort((a, b) => a - b);
  const pick = (p: number): number | null =>
    perNote.length === 0 ? null : (perNote[Math.ceil(p * perNote.length) - 1] ?? null);
  process.stdout.write(
    `${JSON.stringify({ notes: rest.length, ms, sequential: { notes: perNote.length, ms_per_note_p50: pick(0.5), ms_per_note_p95: pick(0.95) } })}\n`,
  );
}

await main();
