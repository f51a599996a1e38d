import type { BenchContext } from '../lib/context.ts';
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
      const raw = ctx.baseline?.notesPerSecond;
      return [
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
          target: '≥ 0.5× raw (issue 15)',
          met: raw !== undefined && perSecond / raw >= 0.5 && failed === 0,
          ...(raw === undefined ? {} : { ratio: perSecond / raw }),
        },
        {
          suite: 'backlog',
          name: 'throughput from ready',
          value: afterReady,
          unit: 'notes/s',
          ...(raw === undefined ? {} : { ratio: afterReady / raw }),
        },
        {
          suite: 'backlog',
          name: 'spawn → ready',
          value: readyAt - daemon.spawnedAt,
          unit: 'ms',
          note: 'includes starting node, the bundled daemon, and loading the bench plugin (JavaScript)',
        },
      ];
    } finally {
      done.close();
      await daemon.stop();
    }
  } finally {
    await vault.remove();
  }
}
