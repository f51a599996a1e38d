import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_CAP, QUIET_LOG, type BenchContext } from '../lib/context.ts';
import { noteName, sleepNote } from '../lib/note-text.ts';
import type { Figure } from '../lib/report.ts';
import { makeBenchVault } from '../lib/temp-vault.ts';
import { startWarmDaemon } from '../lib/warm-daemon.ts';

/**
 * Concurrency cap: slow calls (`bench_sleep`) spread over several notes dropped at once; the
 * tool logs how many calls were in flight at each start, the harness takes the highest.
 * @param ctx the bench context.
 */
export async function runConcurrency(ctx: BenchContext): Promise<Figure[]> {
  const { sleepCalls, sleepMs, sleepCallsPerNote } = ctx.sizes;
  const notes = Math.ceil(sleepCalls / sleepCallsPerNote);
  const vault = await makeBenchVault('concurrency', QUIET_LOG);
  const statsFile = join(vault.dir, 'in-flight.txt');
  await appendFile(
    vault.configPath,
    `tools:\n  bench_sleep:\n    stats: ${JSON.stringify(statsFile)}\n`,
  );
  try {
    const warm = await startWarmDaemon(vault);
    try {
      const t0 = performance.now();
      let calls = 0;
      for (let i = 0; i < notes; i++) {
        const here = Math.min(sleepCallsPerNote, sleepCalls - calls);
        calls += here;
        await vault.drop(noteName('sleep', i), sleepNote(i, here, sleepMs));
      }
      const ideal = Math.ceil(sleepCalls / DEFAULT_CAP) * sleepMs;
      const allAt = await warm.done.waitCount(notes + 1, ideal * 3 + 30_000);
      const wall = (allAt - t0) / 1000;
      const counts = (await readFile(statsFile, 'utf8')).split('\n').filter(Boolean).map(Number);
      const max = Math.max(...counts);
      const failed = await vault.count('Failed');
      return [
        {
          suite: 'concurrency',
          name: `${sleepCalls} calls of ${sleepMs} ms: wall time`,
          value: wall,
          unit: 's',
          note: `${notes} notes of ${sleepCallsPerNote} calls dropped at once; ideal at cap ${DEFAULT_CAP}: ${(ideal / 1000).toFixed(1)} s; ${counts.length} calls started, ${failed} notes in Failed/`,
        },
        {
          suite: 'concurrency',
          name: 'highest in flight',
          value: max,
          unit: `calls (cap ${DEFAULT_CAP})`,
          target: 'never above the cap; the cap reached',
          met: max === DEFAULT_CAP && counts.length === sleepCalls && failed === 0,
        },
      ];
    } finally {
      await warm.close();
    }
  } finally {
    await vault.remove();
  }
}
