import { mkdir } from 'node:fs/promises';
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
  return (await import(pathToFileURL(outfile).href)) as T;
}
