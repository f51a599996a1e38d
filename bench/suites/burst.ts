import { performance } from 'node:perf_hooks';
import { QUIET_LOG, type BenchContext } from '../lib/context.ts';
import { echoNote, noteName } from '../lib/note-text.ts';
import type { Figure } from '../lib/report.ts';
import { makeBenchVault } from '../lib/temp-vault.ts';
import { forEachLimit } from '../lib/wait-until.ts';
import { startWarmDaemon } from '../lib/warm-daemon.ts';

/**
 * Burst: notes dropped as fast as the harness can (64 atomic drops in flight) into a running
 * daemon; all must reach `Done/`. Events the kernel drops (inotify queue overflow) must be made up
 * by the reconcile scan (default every 30 s).
 * @param ctx the bench context.
 */
export async function runBurst(ctx: BenchContext): Promise<Figure[]> {
  const n = ctx.sizes.burstNotes;
  const vault = await makeBenchVault('burst', QUIET_LOG);
  try {
    const warm = await startWarmDaemon(vault);
    try {
      const indexes = Array.from({ length: n }, (_, i) => i);
      const t0 = performance.now();
      await forEachLimit(indexes, 64, (i) => vault.drop(noteName('burst', i), echoNote(i)));
      const droppedAt = performance.now();
      let timedOut: string | undefined;
      let allAt = performance.now();
      try {
        // +1: the probe note is in Done/ too.
        allAt = await warm.done.waitCount(n + 1, Math.max(120_000, n * 20));
      } catch (error) {
        timedOut = (error as Error).message;
      }
      const processed = (await vault.count('Done')) - 1;
      const failed = await vault.count('Failed');
      const left = (await vault.count('Needs_Action')) + (await vault.count('In_Progress'));
      const seconds = (allAt - t0) / 1000;
      const raw = ctx.baseline?.notesPerSecond;
      return [
        {
          suite: 'burst',
          name: `${n} notes dropped while running: processed`,
          value: (processed / n) * 100,
          unit: '%',
          target: '100 %, none lost',
          met: processed === n,
          note: `${processed} in Done/, ${failed} in Failed/, ${left} still in Needs_Action/ or In_Progress/${timedOut === undefined ? '' : `; ${timedOut}`}; log level warn`,
        },
        { suite: 'burst', name: 'dropping them took', value: (droppedAt - t0) / 1000, unit: 's' },
        {
          suite: 'burst',
          name: 'first drop → all in Done',
          value: timedOut === undefined ? seconds : null,
          unit: 's',
        },
        {
          suite: 'burst',
          name: 'throughput',
          value: timedOut === undefined ? n / seconds : null,
          unit: 'notes/s',
          ...(raw === undefined || timedOut !== undefined ? {} : { ratio: n / seconds / raw }),
        },
      ];
    } finally {
      await warm.close();
    }
  } finally {
    await vault.remove();
  }
}
