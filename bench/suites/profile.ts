import { readdirSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { QUIET_LOG, type BenchContext } from '../lib/context.ts';
import { renderProfile, summariseCpuProfile, type ProfileSummary } from '../lib/cpu-profile.ts';
import { spawnDaemon } from '../lib/daemon-process.ts';
import { FolderWatch } from '../lib/folder-watch.ts';
import { echoNote, noteName } from '../lib/note-text.ts';
import type { Figure } from '../lib/report.ts';
import { flushPageCache, makeBenchVault } from '../lib/temp-vault.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** The last profile summary, for the report printed after the table. */
export let lastProfile: { summary: ProfileSummary; file: string; markdown: string } | undefined;

/**
 * Profile `vaultd run` (node --cpu-prof) on a backlog until it is all in `Done/` and summarise self time by function.
 * @param ctx the bench context; the profile and its summary go to `ctx.profileDir`.
 */
export async function runProfile(ctx: BenchContext): Promise<Figure[]> {
  const n = ctx.sizes.profileNotes;
  const vault = await makeBenchVault('profile', QUIET_LOG);
  try {
    await vault.fill('Needs_Action', n, (i) => noteName('prof', i), echoNote);
    flushPageCache();
    await mkdir(ctx.profileDir, { recursive: true });
    const before = new Set(readdirSync(ctx.profileDir));
    // `run`, not `once`: the watcher's work on the inbox is part of what users pay for.
    const daemon = spawnDaemon('run', vault.configPath, [
      '--cpu-prof',
      `--cpu-prof-dir=${ctx.profileDir}`,
    ]);
    const watch = new FolderWatch(vault.folder('Done'));
    let seconds: number;
    try {
      const allAt = await Promise.race([
        watch.waitCount(n, Math.max(120_000, n * 20)),
        daemon.exited.then((code) =>
          Promise.reject(new Error(`vaultd exited (${String(code)}):\n${daemon.tail()}`)),
        ),
      ]);
      seconds = (allAt - daemon.spawnedAt) / 1000;
    } finally {
      watch.close();
    }
    // A clean exit (SIGTERM, drained) is what makes node write the profile.
    const code = await daemon.stop(30_000);
    if (code !== 0)
      throw new Error(`vaultd run exited ${String(code)} on SIGTERM:\n${daemon.tail()}`);
    const done = await vault.count('Done');
    // The main thread's profile is the largest; a module-loader thread may write its own.
    const fresh = readdirSync(ctx.profileDir)
      .filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
      .map((f) => join(ctx.profileDir, f))
      .sort((a, b) => statSync(b).size - statSync(a).size);
    const file = fresh[0];
    if (file === undefined) throw new Error(`no .cpuprofile written to ${ctx.profileDir}`);
    const summary = summariseCpuProfile(file, ROOT);
    const markdown = renderProfile(summary);
    await writeFile(join(ctx.profileDir, 'summary.md'), `${markdown}\n`);
    lastProfile = { summary, file, markdown };
    return [
      {
        suite: 'profile',
        name: `vaultd run --cpu-prof, ${n}-note backlog, spawn → all in Done`,
        value: seconds,
        unit: 's',
        note: `${done} in Done/; main thread busy ${(summary.busyMs / 1000).toFixed(2)} s of ${(summary.totalMs / 1000).toFixed(2)} s; profile ${file}`,
      },
    ];
  } finally {
    await vault.remove();
  }
}
