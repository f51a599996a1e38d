import { performance } from 'node:perf_hooks';
import type { BenchContext } from '../lib/context.ts';
import { spawnDaemon } from '../lib/daemon-process.ts';
import { archivedNote, noteName } from '../lib/note-text.ts';
import { countInotifyWatches, readCpuMs, readRssMb } from '../lib/proc.ts';
import type { Figure } from '../lib/report.ts';
import { flushPageCache, makeBenchVault } from '../lib/temp-vault.ts';
import { sleep } from '../lib/wait-until.ts';

// The idle window "at rest" starts this long after ready at the earliest: V8's memory reducer has
// run its collections after start-up by then (bench/README items 16 and 22).
const REST_AFTER_READY_MS = 31_000;

/** A start of `vaultd run` on a vault at rest. */
interface StartFigures {
  readyMs: number;
  rssMb: number;
  watches: number;
}

/**
 * Scale at rest: start-up, RSS, inotify watches and idle CPU with a large archive (`Done/`,
 * `Failed/`, `Logs/`), next to the same start on an empty vault. Measured with the default
 * configuration, as SPEC section 10 says (no plugin: nothing here runs a call); the empty vault is
 * started once more with the bench plugin the other suites load, to show what a plugin adds.
 * @param ctx the bench context.
 */
export async function runScale(ctx: BenchContext): Promise<Figure[]> {
  const { scaleNotes, scaleLogFiles, idleSeconds } = ctx.sizes;
  const empty = await measureEmptyStart(false);
  const withPlugin = await measureEmptyStart(true);
  const vault = await makeBenchVault('scale', '', { plugin: false });
  try {
    const t0 = performance.now();
    const failed = Math.round(scaleNotes / 20);
    await vault.fill('Done', scaleNotes - failed, (i) => noteName('done', i), archivedNote);
    await vault.fill('Failed', failed, (i) => noteName('failed', i), archivedNote);
    await vault.fill('Logs', scaleLogFiles, logName, logText);
    flushPageCache();
    const fillSeconds = (performance.now() - t0) / 1000;

    const daemon = spawnDaemon('run', vault.configPath);
    try {
      const readyAt = await daemon.waitReady(60_000);
      const readyMs = readyAt - daemon.spawnedAt;
      const rssAtReady = readRssMb(daemon.pid);
      await sleep(1_000); // let start-up work (JIT, first timers) settle before the idle window
      // Counted a second after ready on both vaults: the state folder's watch is set just after.
      const watches = countInotifyWatches(daemon.pid);
      const cpu0 = readCpuMs(daemon.pid);
      const w0 = performance.now();
      let rssMax = rssAtReady;
      for (let s = 0; s < idleSeconds; s++) {
        await sleep(1_000);
        rssMax = Math.max(rssMax, readRssMb(daemon.pid));
      }
      const idlePercent = ((readCpuMs(daemon.pid) - cpu0) / (performance.now() - w0)) * 100;
      // A second window of the same length: V8's memory reducer runs a few full collections on
      // its helper threads in the first seconds of rest after start-up (or after any burst of
      // work), 15–25 s after ready here; the second window, which starts no earlier than 31 s
      // after ready (later than the first window's end with --quick's 10 s windows), is the
      // daemon at rest.
      const restFrom = readyAt + REST_AFTER_READY_MS;
      while (performance.now() < restFrom) {
        await sleep(Math.min(1_000, restFrom - performance.now()));
        rssMax = Math.max(rssMax, readRssMb(daemon.pid));
      }
      const cpu1 = readCpuMs(daemon.pid);
      const w1 = performance.now();
      for (let s = 0; s < idleSeconds; s++) {
        await sleep(1_000);
        rssMax = Math.max(rssMax, readRssMb(daemon.pid));
      }
      const restPercent = ((readCpuMs(daemon.pid) - cpu1) / (performance.now() - w1)) * 100;
      if (daemon.exitCode() !== undefined)
        throw new Error(`vaultd exited during the idle window:\n${daemon.tail()}`);
      const archive = `${scaleNotes} notes in Done/ and Failed/, ${scaleLogFiles} files in Logs/ (made in ${fillSeconds.toFixed(1)} s)`;
      return [
        {
          suite: 'scale',
          name: 'spawn → ready with archive',
          value: readyMs,
          unit: 'ms',
          target: '≤ 1 s',
          met: readyMs <= 1000,
          note: `${archive}; the default configuration (no plugin); includes starting node; the same start on an empty vault: ${empty.readyMs.toFixed(0)} ms, ${empty.rssMb.toFixed(1)} MB, ${empty.watches} watches; log level info`,
        },
        {
          suite: 'scale',
          name: 'spawn → ready, empty vault with the bench plugin',
          value: withPlugin.readyMs,
          unit: 'ms',
          note: `the plugin the other suites load (JavaScript, imports 'vaultd'): Node's module-hooks thread and the plugin's schemas; RSS ${withPlugin.rssMb.toFixed(1)} MB`,
        },
        {
          suite: 'scale',
          name: 'ready: archive cost over empty vault',
          value: readyMs - empty.readyMs,
          unit: 'ms',
        },
        {
          suite: 'scale',
          name: 'RSS at ready',
          value: rssAtReady,
          unit: 'MB',
          note: `VmRSS from /proc/<pid>/status; empty vault: ${empty.rssMb.toFixed(1)} MB`,
        },
        {
          suite: 'scale',
          name: 'RSS, highest from ready to the end of the idle windows',
          value: rssMax,
          unit: 'MB',
          target: '≤ 150 MB',
          met: rssMax <= 150,
        },
        {
          suite: 'scale',
          name: 'inotify watches',
          value: watches,
          unit: '',
          target: 'archives unwatched',
          met: watches <= empty.watches,
          note: 'counted as `inotify wd:` lines in /proc/<pid>/fdinfo/*; equal to the empty vault means Done/, Failed/, Logs/ cost nothing',
        },
        {
          suite: 'scale',
          name: `idle CPU over ${idleSeconds} s`,
          value: idlePercent,
          unit: '% of a core',
          target: '≤ 0.2 %',
          met: idlePercent <= 0.2,
          note: "utime + stime from /proc/<pid>/stat, window starts 1 s after ready; default reconcile every 30 s; V8's memory reducer collects once or twice in it after start-up (bench/README items 16, 22, 31)",
        },
        {
          suite: 'scale',
          name: `idle CPU at rest, ${idleSeconds} s`,
          value: restPercent,
          unit: '% of a core',
          target: '≤ 0.2 %',
          met: restPercent <= 0.2,
          note: 'from 31 s after ready at the earliest (right after the first window in full runs): V8 has finished collecting after start-up',
        },
      ];
    } finally {
      await daemon.stop();
    }
  } finally {
    await vault.remove();
  }
}

async function measureEmptyStart(plugin: boolean): Promise<StartFigures> {
  const vault = await makeBenchVault('start', '', { plugin });
  try {
    const daemon = spawnDaemon('run', vault.configPath);
    try {
      const readyAt = await daemon.waitReady(60_000);
      const rssMb = readRssMb(daemon.pid);
      await sleep(1_000);
      return {
        readyMs: readyAt - daemon.spawnedAt,
        rssMb,
        watches: countInotifyWatches(daemon.pid),
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await vault.remove();
  }
}

function logName(i: number): string {
  const day = new Date(Date.UTC(2020, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);
  return `${day}.jsonl`;
}

function logText(i: number): string {
  const line = JSON.stringify({
    call_id: `call_${i}`,
    tool: 'bench_echo',
    note: 'Done/x.md',
    status: 'success',
  });
  return `${line}\n`.repeat(20);
}
