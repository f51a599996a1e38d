#!/usr/bin/env node
// Runs every test/**/*.test.ts through node:test with tsx. Node 20 does not expand globs in
// `--test`, so the file list is spelled out here. Extra arguments are passed to node --test
// (e.g. `npm test -- --test-name-pattern=executor`); a path argument narrows the files.
// No `--test-force-exit`: it can end a file's process before its last results reach the runner
// (fewer tests counted, a failure possibly among them). Daemons a failed test left running are
// killed by test/helpers/vault.ts once the file's tests are done.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawn } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (name === 'fixtures' || name.startsWith('.')) continue;
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.ts')) out.push(relative(root, p));
  }
  return out;
}
const args = process.argv.slice(2);
const paths = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
let files = walk(join(root, 'test'));
if (paths.length) files = files.filter((f) => paths.some((p) => f.includes(p)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', ...flags, ...files],
  { stdio: 'inherit', cwd: root },
);
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
