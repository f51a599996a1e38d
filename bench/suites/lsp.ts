import { chmod, cp, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startPackHost } from '../../test/helpers/pack-host.ts';
import type { BenchContext } from '../lib/context.ts';
import type { Figure } from '../lib/report.ts';

const FIXTURE = new URL('../../test/fixtures/lsp/project', import.meta.url).pathname;

/**
 * The lsp pack against the real typescript-language-server on the test fixture project, in this
 * process through the pack host and executor: the first call on a cold workspace (the server
 * starts and the project is parsed and checked) and warm calls after it, in ms per call.
 * @param ctx the bench context.
 */
export async function runLsp(ctx: BenchContext): Promise<Figure[]> {
  const base = await mkdtemp(join(tmpdir(), 'vaultd-bench-lsp-'));
  // As root, the sandboxed server runs as tools.lsp.run_as (65534), which must enter the folder.
  await chmod(base, 0o755);
  const vault = join(base, 'vault');
  await cp(FIXTURE, join(vault, 'code'), { recursive: true });
  for (const name of await readdir(join(vault, 'code/src'))) {
    if (name.endsWith('.txt')) {
      await rename(join(vault, 'code/src', name), join(vault, 'code/src', name.slice(0, -4)));
    }
  }
  const file = join(base, 'vaultd.yaml');
  await writeFile(file, JSON.stringify({ tools: { lsp: { enabled: true } } }));
  const { host, executor } = await startPackHost(file, { vault, executor: { cacheTtlMs: 0 } });
  let seq = 0;
  const timed = async (name: string, args: Record<string, unknown>): Promise<number> => {
    const t0 = performance.now();
    const result = await executor.execute({ id: `b${seq++}`, name, arguments: args });
    const ms = performance.now() - t0;
    if (!result.success) throw new Error(`${name} failed: ${result.content}`);
    return ms;
  };
  const figures: Figure[] = [];
  try {
    const cold = await timed('diagnostics', { path: 'code/src/main.ts' });
    figures.push({
      suite: 'lsp',
      name: 'diagnostics, cold workspace (server start + project check)',
      value: cold,
      unit: 'ms',
      note: 'typescript-language-server on the 3-file test fixture',
    });
    const runs = ctx.quick ? 5 : 20;
    const cases: [string, string, Record<string, unknown>][] = [
      ['diagnostics, warm', 'diagnostics', { path: 'code/src/main.ts' }],
      ['hover, warm', 'hover', { path: 'code/src/main.ts', line: 3, column: 30 }],
      ['definition, warm', 'definition', { path: 'code/src/main.ts', line: 3, column: 30 }],
      ['references, warm', 'references', { path: 'code/src/util.ts', line: 2, column: 17 }],
      ['symbols of a file, warm', 'symbols', { path: 'code/src/util.ts' }],
    ];
    for (const [label, name, args] of cases) {
      const times: number[] = [];
      for (let i = 0; i < runs; i++) times.push(await timed(name, args));
      times.sort((a, b) => a - b);
      figures.push({
        suite: 'lsp',
        name: label,
        value: times[Math.floor(times.length / 2)] ?? null,
        unit: 'ms p50',
        note: `${runs} calls; max ${(times.at(-1) ?? 0).toFixed(1)} ms${name === 'diagnostics' ? '; includes the settle time (diagnostics_settle_ms, 300 ms)' : ''}`,
      });
    }
  } finally {
    await host.stop();
    await rm(base, { recursive: true, force: true });
  }
  return figures;
}
