#!/usr/bin/env node
// File work (reads, fsyncs, renames) and DNS lookups go through libuv's thread pool; it must be
// sized before the first fs call (imports are hoisted, but none of them touches the pool). Two
// threads per core, 4 to 16: on 2 cores a backlog ran faster with 4 threads than with 8 or 16
// (fewer threads to wake per job, fewer context switches). DNS lookups never take more than half
// of them (src/execute/lookup-limit.ts), so a stuck name server cannot stop the file work
// (README, Decisions).
process.env.UV_THREADPOOL_SIZE ??= String(Math.min(16, Math.max(4, 2 * availableParallelism())));

import { readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';

// V8's memory reducer, tuned for a browser's background tabs, collects the whole heap two or
// three times 8 s after start-up (60-110 ms of CPU on a 10-14 MB heap), while a daemon that has
// nothing to do should cost nothing. Both flags below are read by V8 when it decides, so setting
// them here, before the daemon's code loads, takes effect: no collection at all after a start-up
// that never needed a full one (an empty inbox), and one instead of two or three after one that
// did. The price is the start-up garbage kept until the first note comes (RSS at rest 66 MB
// instead of 60 for an empty vault; bench/README.md item 31). Flags given to node win. Only on
// V8 11 (every Node 20), where both were checked: later V8s replaced the second with a count, and
// V8 answers a flag it does not know with an error line on stderr.
if (
  process.versions.v8.startsWith('11.') &&
  !process.execArgv.some((arg) => arg.includes('memory-reducer'))
) {
  setFlagsFromString('--no-memory-reducer-for-small-heaps');
  setFlagsFromString('--memory-reducer-single-gc');
}

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
