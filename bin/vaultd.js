#!/usr/bin/env node
// File work (reads, fsyncs, renames) and DNS lookups go through libuv's thread pool; it must be
// sized before the first fs call (imports are hoisted, but none of them touches the pool). Two
// threads per core, 8 to 16: on 2 cores a backlog ran as fast or faster with 8 threads as with 16
// (fewer idle threads to wake per job), and 8 leave room for file work while a few calls wait on
// a slow DNS server (README, Decisions).
process.env.UV_THREADPOOL_SIZE ??= String(Math.min(16, Math.max(8, 2 * availableParallelism())));

import { readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
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
