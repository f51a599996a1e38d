#!/usr/bin/env node
// File work (reads, fsyncs, renames) goes through libuv's thread pool, whose default of 4 threads
// serialises fsyncs under load; it must be sized before the first fs call.
process.env.UV_THREADPOOL_SIZE ??= '16';

import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

/** Newest modification time of the files under dir (the sources are a few dozen files). */
function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** The bundle made by `npm run build` (run by `npm ci`), when it is newer than every source. */
function freshBundle() {
  if (process.env.VAULTD_FROM_SOURCE === '1') return undefined;
  const bundle = join(root, 'dist', 'vaultd.mjs');
  try {
    return statSync(bundle).mtimeMs >= newestMtime(join(root, 'src')) ? bundle : undefined;
  } catch {
    return undefined;
  }
}

const bundle = freshBundle();
let main;
if (bundle !== undefined) {
  ({ main } = await import(bundle));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
await main(process.argv);
