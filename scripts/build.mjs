#!/usr/bin/env node
// Bundles the daemon's TypeScript sources into dist/ with esbuild (the compiler tsx itself uses),
// so `vaultd` starts in about half the time and memory of compiling through tsx at every start:
// dist/vaultd.mjs (the CLI and daemon), dist/index.mjs (the public exports, which plugins import
// as 'vaultd') and dist/note-worker.mjs (the thread that parses large notes). The entries share
// their modules through chunks, so a plugin's `ToolError` is the daemon's. Dependencies stay
// external. bin/vaultd.js uses the bundle only while it is newer than
// every source file, so an edited checkout never runs stale code.
import { mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { NODE_BUNDLE } from './esbuild-options.mjs';

const root = new URL('..', import.meta.url).pathname;
const dist = join(root, 'dist');
const result = await build({
  ...NODE_BUNDLE,
  entryPoints: {
    vaultd: `${root}src/cli/main.ts`,
    index: `${root}src/index.ts`,
    'note-worker': `${root}src/note/note-worker.ts`,
  },
  outdir: `${root}dist`,
  outExtension: { '.js': '.mjs' },
  splitting: true,
  sourcemap: 'linked',
  metafile: true,
  write: false,
});
// esbuild writes the code in ASCII (its default charset) but keeps the comments of class members
// as written, and one `–` or `…` in them made V8 hold the whole chunk's source as a two-byte
// string: twice the memory (1.2 MB instead of 0.6 for the largest, the biggest object in an idle
// daemon's heap). Characters past U+00FF are escaped in comment lines; anywhere else the build
// stops, since changing them could change the code.
mkdirSync(dist, { recursive: true });
for (const file of result.outputFiles) {
  let text = file.text;
  if (!file.path.endsWith('.map') && /[^\0-\xff]/u.test(text)) {
    text = text
      .split('\n')
      .map((line, index) => {
        if (!/[^\0-\xff]/u.test(line)) return line;
        if (!/^\s*(\/\*|\*|\/\/)/.test(line))
          throw new Error(`${file.path}:${index + 1}: a character past U+00FF outside a comment`);
        return line.replace(/[^\0-\xff]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
      })
      .join('\n');
  }
  writeFileSync(file.path, text);
}

// Chunk names carry a hash of their content: remove the chunks of earlier builds.
// The metafile names outputs relative to the working directory.
const written = new Set(Object.keys(result.metafile.outputs).map((file) => resolve(file)));
for (const name of readdirSync(dist)) {
  if (!written.has(join(dist, name))) unlinkSync(join(dist, name));
}

// Validators of the built-in config schemas and tools' schemas, made ahead of time
// (src/config/precompile.ts): loading Ajv and compiling them was a third of `vaultd run`'s
// start-up, or the first call's wait. The schemas come from the sources through a bundle of that
// module, run once here.
const generator = join(dist, '.precompile.mjs');
await build({
  ...NODE_BUNDLE,
  entryPoints: [`${root}src/config/precompile.ts`],
  outfile: generator,
});
try {
  const precompile = await import(generator);
  writeFileSync(
    join(dist, 'config-validators.cjs'),
    precompile.configValidatorsSource(precompile.builtinConfigSchemas()),
  );
  writeFileSync(
    join(dist, 'tool-validators.cjs'),
    precompile.toolValidatorsSource(precompile.builtinToolSchemas()),
  );
  writeFileSync(join(dist, 'meta-validators.cjs'), precompile.metaValidatorsSource());
} finally {
  rmSync(generator, { force: true });
}
