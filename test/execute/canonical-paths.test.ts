// Repository-relative path lists (git's `paths`): one canonical form, the same when checked again,
// with each element's vault path for deny and ask rules.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { canonicalPaths, canonicalRepoPath } from '../../src/execute/canonical-paths.ts';
import { defineTool } from '../../src/protocol/define-tool.ts';
import type { FileRoot } from '../../src/protocol/types.ts';

describe('canonical repository paths', () => {
  let vault: string;
  let roots: FileRoot[];
  before(async () => {
    vault = join(await realpath(await mkdtemp(join(tmpdir(), 'vaultd-canon-'))), 'vault');
    await mkdir(join(vault, '.git'), { recursive: true });
    await mkdir(join(vault, 'Projects', 'app', '.git'), { recursive: true });
    await mkdir(join(vault, 'Projects', 'app', 'src'), { recursive: true });
    roots = [{ name: 'vault', path: vault, writable: true }];
  });
  after(async () => {
    await rm(join(vault, '..'), { recursive: true, force: true });
  });

  it('writes each path relative to the working tree, by name, idempotently', () => {
    const wt = '/v/repo';
    for (const [given, want] of [
      ['a/b.md', 'a/b.md'],
      ['./a//b.md', 'a/b.md'],
      ['x/../a/b.md', 'a/b.md'],
      ['/v/repo/a/b.md', 'a/b.md'],
      ['.', '.'],
      ['a/..', '.'],
      [':(top)x', ':(top)x'],
      [':/x', ':/x'],
      ['../other/x', '/v/other/x'],
      ['/etc/passwd', '/etc/passwd'],
    ] as const) {
      assert.equal(canonicalRepoPath(wt, given), want, given);
      assert.equal(canonicalRepoPath(wt, want), want, `${want} again`);
    }
  });

  it("gates a nested repository's paths in its own terms and gives deny rules their vault paths", () => {
    const tool = defineTool({
      name: 'git_like',
      description: 'test',
      parameters: {
        repo: { type: 'string' },
        paths: { type: 'array', items: { type: 'string' } },
      },
      safety: 'safe',
      pathParameters: ['repo'],
      repoPathParameters: { paths: 'repo' },
      handler: () => 'ok',
    });
    const first = canonicalPaths(
      tool,
      { repo: 'Projects/app/src', paths: ['./src/../src/main.ts', '../../Private/x'] },
      roots,
    );
    assert.ok(typeof first !== 'string');
    assert.deepEqual(first.args, {
      repo: 'Projects/app/src',
      paths: ['src/main.ts', join(vault, 'Private', 'x')],
    });
    assert.deepEqual(first.spelled?.['paths'], [
      './src/../src/main.ts',
      'Projects/app/src/main.ts',
      '../../Private/x',
      'Private/x',
    ]);
    const again = canonicalPaths(tool, first.args, roots);
    assert.ok(typeof again !== 'string');
    assert.deepEqual(again.args, first.args);
    // The vault's own repository: repository paths are vault paths.
    const top = canonicalPaths(tool, { paths: ['notes/../Private/x'] }, roots);
    assert.ok(typeof top !== 'string');
    assert.deepEqual(top.args, { paths: ['Private/x'] });
  });
});
