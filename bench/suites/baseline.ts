import { spawn } from 'node:child_process';
import type { BenchContext } from '../lib/context.ts';
import { echoNote, noteName } from '../lib/note-text.ts';
import type { Figure } from '../lib/report.ts';
import { flushPageCache, makeBenchVault } from '../lib/temp-vault.ts';

const SCRIPT = new URL('../raw-baseline.ts', import.meta.url).pathname;
const NOTE_CONCURRENCY = 40; // the daemon's default: max(32, 4 × cap 10) notes at once

interface RawOutput {
  notes: number;
  ms: number;
  sequential: { notes: number; ms_per_note_p50: number | null; ms_per_note_p95: number | null };
}

/**
 * The raw file-system baseline over as many notes as the backlog benchmark, plus a sequential
 * sample for the single-note floor; sets `ctx.baseline`.
 * @param ctx the bench context.
 */
export async function runBaseline(ctx: BenchContext): Promise<Figure[]> {
  const { backlogNotes, baselineSequential } = ctx.sizes;
  const vault = await makeBenchVault('baseline');
  try {
    await vault.fill(
      'Needs_Action',
      backlogNotes + baselineSequential,
      (i) => noteName('raw', i),
      echoNote,
    );
    flushPageCache();
    const out = await runScript(
      [vault.root, String(NOTE_CONCURRENCY), String(baselineSequential)],
      600_000,
    );
    const done = await vault.count('Done');
    if (done !== backlogNotes + baselineSequential)
      throw new Error(
        `baseline moved ${done} notes, expected ${backlogNotes + baselineSequential}`,
      );
    const notesPerSecond = (out.notes / out.ms) * 1000;
    ctx.baseline = { notesPerSecond, perNoteP50Ms: out.sequential.ms_per_note_p50 };
    return [
      {
        suite: 'baseline',
        name: `raw throughput, ${out.notes} notes, ${NOTE_CONCURRENCY} at once`,
        value: notesPerSecond,
        unit: 'notes/s',
        note: 'plain Node script per note: read, write text + appended result to a temp file, fsync, rename over the note, rename into Done/; UV_THREADPOOL_SIZE=16, the fastest of 2, 4 and 16 for this script (the daemon sizes its own pool: two threads per core, 4 to 16)',
      },
      {
        suite: 'baseline',
        name: `raw time per note, one at a time (p50 of ${out.sequential.notes})`,
        value: out.sequential.ms_per_note_p50,
        unit: 'ms',
        note: `p95 ${out.sequential.ms_per_note_p95?.toFixed(2) ?? 'n/a'} ms; the floor under the latency figure (mostly the fsync)`,
      },
    ];
  } finally {
    await vault.remove();
  }
}

/**
 * The raw script's throughput over `notes` fresh notes, with no sequential sample: run right
 * before and right after the backlog, so that its ratio is to the file system as it is then.
 * @param notes how many notes.
 * @param label a name for the temp vault.
 */
export async function rawThroughput(notes: number, label: string): Promise<number> {
  const vault = await makeBenchVault(label);
  try {
    await vault.fill('Needs_Action', notes, (i) => noteName('raw', i), echoNote);
    flushPageCache();
    const out = await runScript([vault.root, String(NOTE_CONCURRENCY), '0'], 600_000);
    const done = await vault.count('Done');
    if (done !== notes) throw new Error(`the raw script moved ${done} notes, expected ${notes}`);
    return (out.notes / out.ms) * 1000;
  } finally {
    await vault.remove();
  }
}

function runScript(args: string[], timeoutMs: number): Promise<RawOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...args], {
      env: { ...process.env, UV_THREADPOOL_SIZE: '16' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`raw baseline timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0)
        return reject(new Error(`raw baseline exited ${String(code)}: ${err.trim()}`));
      try {
        resolve(JSON.parse(out) as RawOutput);
      } catch {
        reject(new Error(`raw baseline printed no JSON: ${out} ${err}`));
      }
    });
  });
}
