import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FileRoot } from '../../src/protocol/types.ts';
import { canonicalPath, CanonicalPathError } from '../../src/vault/canonical-path.ts';

describe('canonicalPath', () => {
  let base: string;
  let vault: string;
  let roots: FileRoot[];
  before(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-canonical-')));
    vault = join(base, 'vault');
    await mkdir(join(vault, 'Notes'), { recursive: true });
    await mkdir(join(vault, 'Projects'));
    await mkdir(join(base, 'docs'));
    await mkdir(join(base, 'outside'));
    await writeFile(join(vault, 'Notes', 'a.md'), 'a\n');
    await symlink('../Projects', join(vault, 'Notes', 'lnk'));
    await symlink(join(base, 'outside'), join(vault, 'Notes', 'out'));
    await symlink(join(base, 'docs'), join(base, 'docs-link'));
    await symlink('self', join(vault, 'self'));
    roots = [
      { name: 'vault', path: vault, writable: true },
      { name: 'docs', path: join(base, 'docs'), writable: false },
    ];
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  const table: [string, (b: string) => string, (b: string) => string][] = [
    ['a plain path', () => 'Notes/a.md', () => 'Notes/a.md'],
    ['./ and repeated slashes', () => './Notes//a.md', () => 'Notes/a.md'],
    ['a trailing slash', () => 'Notes/', () => 'Notes'],
    ['.. inside the vault', () => 'Notes/../Projects/plan.md', () => 'Projects/plan.md'],
    ['.. through a missing folder', () => 'nope/../Notes/x.md', () => 'Notes/x.md'],
    ['the vault itself', () => '.', () => '.'],
    ['an absolute path in the vault', (b) => `${b}/vault/Notes/a.md`, () => 'Notes/a.md'],
    ['a link to a folder of the vault', () => 'Notes/lnk/plan.md', () => 'Projects/plan.md'],
    ['a missing file under a link', () => 'Notes/lnk/new/x.md', () => 'Projects/new/x.md'],
    ['a link out of the vault', () => 'Notes/out/s.txt', (b) => `${b}/outside/s.txt`],
    ['.. out of the vault', () => '../outside/s.txt', (b) => `${b}/outside/s.txt`],
    ['another root', (b) => `${b}/docs/d.md`, (b) => `${b}/docs/d.md`],
    ['another root through a link', (b) => `${b}/docs-link/d.md`, (b) => `${b}/docs/d.md`],
    ['below a file', () => 'Notes/a.md/x', () => 'Notes/a.md/x'],
    ['an empty path, left for the access layer', () => '', () => ''],
    ['a NUL byte, left for the access layer', () => 'Notes/\0x', () => 'Notes/\0x'],
  ];
  for (const [what, input, expected] of table) {
    it(`${what}: ${JSON.stringify(input('<base>'))} → ${JSON.stringify(expected('<base>'))}`, () => {
      assert.equal(canonicalPath(roots, input(base)), expected(base));
    });
  }

  it('throws for a loop of links, and leaves a path alone without roots', () => {
    assert.throws(() => canonicalPath(roots, 'self/x'), CanonicalPathError);
    assert.throws(() => canonicalPath(roots, 'self/x'), /loop of symbolic links/);
    assert.equal(canonicalPath([], './a/../b'), './a/../b');
  });
});
