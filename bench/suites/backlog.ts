import type { BenchContext } from '../lib/context.ts';
import { rawThroughput } from './baseline.ts';
import { spawnDaemon } from '../lib/daemon-process.ts';
import { FolderWatch } from '../lib/folder-watch.ts';
import { echoNote, noteName } from '../lib/note-text.ts';
import type { Figure } from '../lib/report.ts';
import { flushPageCache, makeBenchVault } from '../lib/temp-vault.ts';

/**
 * Backlog throughput: notes present in the inbox before `vaultd run` starts, timed from the
 * spawn until all are in `Done/`. Runs at the default log level (info), because the time to ready
 * is read from the `vaultd ready` line.
 * @param ctx the bench context.
 */
export async function runBacklog(ctx: BenchContext): Promise<Figure[]> {
  const n = ctx.sizes.backlogNotes;
  // The raw script again, right before and right after the daemon, on the same number of fresh
  // notes: what a file system costs depends on what it did last (this VM's ext4 skips the inodes
  // it freed in the last half minute when it makes a file, bench/README.md item 50), and the
  // opening baseline ran before every other suite. The target is read against the mean of the
  // two; the ratio to the opening baseline is printed too.
  const before = await rawThroughput(n, 'backlog-raw-before');
  const { figures, failed } = await backlogOnly(n);
  const after = await rawThroughput(n, 'backlog-raw-after');
  const bracket = (before + after) / 2;
  const opening = ctx.baseline?.notesPerSecond;
  const spawn = figures.find((f) => f.name === 'throughput from spawn');
  const ready = figures.find((f) => f.name === 'throughput from ready');
  const out: Figure[] = [
    {
      suite: 'backlog',
      name: 'raw script right before / right after the daemon (mean)',
      value: bracket,
      unit: 'notes/s',
      note: `before ${before.toFixed(0)}, after ${after.toFixed(0)} notes/s, ${n} fresh notes each, as the opening baseline (40 at once)`,
    },
  ];
  for (const f of figures) {
    if (f === spawn || f === ready) {
      const value = f.value as number;
      out.push({
        ...f,
        ratio: value / bracket,
        ...(f === spawn
          ? { target: '≥ 0.5× raw (issue 15)', met: value / bracket >= 0.5 && failed === 0 }
          : {}),
        note: `ratio to the raw script run right before and after it (mean)${opening === undefined ? '' : `; to the opening baseline ${(value / opening).toFixed(2)}×`}`,
      });
    } else {
      out.push(f);
    }
  }
  return out;
}

/** The daemon's part: its figures, and how many notes ended in `Failed/`. */
async function backlogOnly(n: number): Promise<{ figures: Figure[]; failed: number }> {
  const vault = await makeBenchVault('backlog');
  try {
    await vault.fill('Needs_Action', n, (i) => noteName('bl', i), echoNote);
    flushPageCache();
    const done = new FolderWatch(vault.folder('Done'));
    const daemon = spawnDaemon('run', vault.configPath);
    try {
      const readyAt = await daemon.waitReady(60_000);
      const allAt = await Promise.race([
        done.waitCount(n, Math.max(120_000, n * 20)),
        daemon.exited.then((code) =>
          Promise.reject(new Error(`vaultd exited (${String(code)}):\n${daemon.tail()}`)),
        ),
      ]);
      const seconds = (allAt - daemon.spawnedAt) / 1000;
      const perSecond = n / seconds;
      const afterReady = n / ((allAt - readyAt) / 1000);
      const failed = await vault.count('Failed');
      const figures: Figure[] = [
        {
          suite: 'backlog',
          name: `${n} notes, spawn → all in Done`,
          value: seconds,
          unit: 's',
          note: `log level info (the default: one "note processed" line per note); ${failed} in Failed/; the watch on Done/ is checked by a listing every second`,
        },
        {
          suite: 'backlog',
          name: 'throughput from spawn',
          value: perSecond,
          unit: 'notes/s',
        },
        {
          suite: 'backlog',
          name: 'throughput from ready',
          value: afterReady,
          unit: 'notes/s',
        },
        {
          suite: 'backlog',
          name: 'spawn → ready',
          value: readyAt - daemon.spawnedAt,
          unit: 'ms',
          note: 'includes starting node, the bundled daemon, and loading the bench plugin (JavaScript)',
        },
      ];
      return { figures, failed };
    } finally {
      done.close();
      await daemon.stop();
    }
  } finally {
    await vault.remove();
  }
}
