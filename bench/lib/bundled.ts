import { mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { NODE_BUNDLE } from '../../scripts/esbuild-options.mjs';

const ROOT = new URL('../..', import.meta.url).pathname;
const OUT = join(ROOT, 'node_modules', '.cache', 'vaultd-bench');

/**
 * Import a source module the way the daemon runs it: bundled by esbuild with the options of
 * `npm run build` (dist/), not compiled through tsx, whose helpers (`__name` on every function
 * created) cost a parse of a small note about a third more.
 * The bundle is written next to the cache's other files and removed once imported.
 * @param entry the module, relative to the repository root (e.g. `src/note/index.ts`).
 */
export async function importBundled<T>(entry: string): Promise<T> {
  await mkdir(OUT, { recursive: true });
  const outfile = join(OUT, `${basename(entry, '.ts')}-${process.pid}.mjs`);
  await build({
    entryPoints: [join(ROOT, entry)],
    outfile,
    ...NODE_BUNDLE,
  });
  // Once imported the module is in memory: the file goes, or every run would leave one behind.
  try {
    return (await import(pathToFileURL(outfile).href)) as T;
  } finally {
    await rm(outfile, { force: true });
  }
}
