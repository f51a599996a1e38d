// `npm run bench [-- --quick] [--json FILE] [--only a,b]`: the benchmarks of issue 6 against the
// targets of SPEC section 10. Starts the real daemon as child processes on temp vaults, prints a
// table of figures with their targets and ratios to the raw file-system baseline, then a summary
// of a CPU profile of the daemon.
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { FULL, QUICK, type BenchContext } from './lib/context.ts';
import { killAllDaemons, stopAllDaemons } from './lib/daemon-process.ts';
import { renderNotes, renderTable, type Figure, type SuiteResult } from './lib/report.ts';
import { removeAllVaults } from './lib/temp-vault.ts';
import { runBacklog } from './suites/backlog.ts';
import { runBigNote } from './suites/big-note.ts';
import { runBaseline } from './suites/baseline.ts';
import { runBurst } from './suites/burst.ts';
import { runConcurrency } from './suites/concurrency.ts';
import { runLatency } from './suites/latency.ts';
import { runLsp } from './suites/lsp.ts';
import { runParseCost } from './suites/parse-cost.ts';
import { lastProfile, runProfile } from './suites/profile.ts';
import { runScale } from './suites/scale.ts';

const ROOT = new URL('..', import.meta.url).pathname;

const SUITES: Record<string, (ctx: BenchContext) => Promise<Figure[]>> = {
  baseline: runBaseline,
  latency: runLatency,
  backlog: runBacklog,
  burst: runBurst,
  scale: runScale,
  concurrency: runConcurrency,
  parse: runParseCost,
  'big-note': runBigNote,
  lsp: runLsp,
  profile: runProfile,
};

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      json: { type: 'string' },
      only: { type: 'string' },
      'profile-dir': { type: 'string' },
    },
  });
  const names =
    values.only === undefined ? Object.keys(SUITES) : values.only.split(',').map((s) => s.trim());
  const unknown = names.filter((n) => !(n in SUITES));
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown suite(s): ${unknown.join(', ')}; known: ${Object.keys(SUITES).join(', ')}\n`,
    );
    return 2;
  }
  const ctx: BenchContext = {
    sizes: values.quick ? QUICK : FULL,
    quick: values.quick,
    baseline: undefined,
    profileDir: values['profile-dir'] ?? join(tmpdir(), `vaultd-bench-profile-${process.pid}`),
  };
  // The daemons run from dist/ only while it is newer than src/ (bin/vaultd.js); an edited
  // checkout would otherwise measure tsx compiling the sources at every start.
  process.stderr.write('[bench] npm run build…\n');
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], {
    stdio: 'inherit',
  });
  if (built.status !== 0) return 2;
  const results: SuiteResult[] = [];
  const started = performance.now();
  for (const name of names) {
    const run = SUITES[name] as (ctx: BenchContext) => Promise<Figure[]>;
    const t0 = performance.now();
    process.stderr.write(`[bench] ${name}…\n`);
    try {
      const figures = await run(ctx);
      results.push({ suite: name, figures, seconds: (performance.now() - t0) / 1000 });
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      process.stderr.write(`[bench] ${name} failed: ${message}\n`);
      results.push({
        suite: name,
        figures: [],
        error: message,
        seconds: (performance.now() - t0) / 1000,
      });
    }
    // A failed suite may leave a daemon behind: stop it before the next suite measures anything.
    await stopAllDaemons();
    await removeAllVaults();
    process.stderr.write(`[bench] ${name} took ${results.at(-1)?.seconds.toFixed(1)} s\n`);
  }
  const total = (performance.now() - started) / 1000;
  const header = `vaultd bench ${values.quick ? '--quick' : '(full)'} · node ${process.version} · ${total.toFixed(0)} s`;
  process.stdout.write(
    `\n${header}\n\n${renderTable(results)}\n\nHow each figure was measured:\n${renderNotes(results)}\n`,
  );
  if (lastProfile !== undefined)
    process.stdout.write(`\nCPU profile (self time):\n\n${lastProfile.markdown}\n`);
  if (values.json !== undefined) {
    const json = {
      command: values.quick ? 'quick' : 'full',
      node: process.version,
      seconds: total,
      baseline: ctx.baseline,
      results,
      profile: lastProfile,
    };
    await writeFile(values.json, `${JSON.stringify(json, null, 2)}\n`);
    process.stderr.write(`[bench] figures written to ${values.json}\n`);
  }
  return results.some((r) => r.error !== undefined) ? 1 : 0;
}

const cleanUpAndExit = (code: number): void => {
  killAllDaemons();
  void removeAllVaults().finally(() => process.exit(code));
};
process.on('SIGINT', () => cleanUpAndExit(130));
process.on('SIGTERM', () => cleanUpAndExit(143));
process.on('exit', () => killAllDaemons());

try {
  process.exitCode = await main();
} finally {
  killAllDaemons();
  await removeAllVaults();
}
