// Policy rules and grants on git's `paths` (relative to the repository), through the real gate,
// executor and git pack: the gate matches each path in its canonical form, so a grant for
// `notes/**` is not stretched by `notes/../Private/secret.md`, and a deny on `Private/**` is not
// dodged by `./Private/…`, an absolute path or a nested repository's own spelling.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ApprovalGate } from '../../../src/approval/gate.ts';
import { GrantStore } from '../../../src/approval/grants.ts';
import { compilePolicy, type PolicyRules } from '../../../src/approval/policy.ts';
import { Executor } from '../../../src/execute/executor.ts';
import { ToolRegistry } from '../../../src/protocol/registry.ts';
import type { ToolResult } from '../../../src/protocol/types.ts';
import { git, makeWorld, type GitWorld } from './harness.ts';

describe('git paths through the gate', { timeout: 60_000 }, () => {
  let w: GitWorld;
  let grants: GrantStore;
  beforeEach(async () => {
    w = await makeWorld();
    await mkdir(join(w.vault, 'Private'));
    await writeFile(join(w.vault, 'Private', 'secret.md'), 'TOP SECRET\n');
    grants = GrantStore.open(join(w.base, 'state'));
  });
  afterEach(async () => {
    await w.cleanup();
  });

  const executor = async (policy: PolicyRules = {}): Promise<Executor> => {
    const registry = new ToolRegistry();
    for (const tool of w.tools.values()) registry.register(tool);
    const files = await w.files();
    return new Executor(registry, {
      gate: new ApprovalGate({ policy: compilePolicy(policy), grants }),
      runtime: () => ({ config: w.config, files }),
      cacheTtlMs: 0,
    });
  };
  const run = (ex: Executor, name: string, args: Record<string, unknown>): Promise<ToolResult> =>
    ex.execute({ id: 'c1', name, arguments: args });

  it('a grant for git_commit(paths:notes/**) does not cover notes/../Private/secret.md', async () => {
    await grants.add('git_commit(paths:notes/**)', { by: 'human' });
    const ex = await executor();
    await writeFile(join(w.vault, 'notes', 'a.md'), 'changed\n');
    const inside = await run(ex, 'git_commit', { message: 'notes', paths: ['notes/a.md'] });
    assert.equal(inside.status, 'success', inside.content);
    assert.equal(inside.metadata.approved_by, 'policy');

    git(w.vault, 'add', 'Private/secret.md');
    git(w.vault, 'commit', '-q', '-m', 'private');
    await writeFile(join(w.vault, 'Private', 'secret.md'), 'LEAKED\n');
    const before = git(w.vault, 'rev-parse', 'HEAD');
    for (const path of ['notes/../Private/secret.md', `notes/./../Private/secret.md`]) {
      const escaped = await run(ex, 'git_commit', { message: 'x', paths: [path] });
      assert.equal(escaped.status, 'rejected', `${path}: ${escaped.content}`);
      assert.match(escaped.content, /needs a human's decision/);
    }
    assert.equal(git(w.vault, 'rev-parse', 'HEAD'), before);
  });

  it('a deny on Private/** catches every spelling of a path in it, also in a nested repository', async () => {
    const ex = await executor({ deny: ['git_*(paths:Private/**)'] });
    const sub = join(w.vault, 'Projects', 'app');
    git(w.base, 'init', '-q', '-b', 'main', sub);
    const spellings: [string, Record<string, unknown>][] = [
      ['git_add', { paths: ['Private/secret.md'] }],
      ['git_add', { paths: ['./Private/secret.md'] }],
      ['git_add', { paths: ['notes/../Private/secret.md'] }],
      ['git_add', { paths: ['notes', 'Private//secret.md'] }],
      ['git_add', { paths: [join(w.vault, 'Private', 'secret.md')] }],
      ['git_diff', { paths: ['./Private/secret.md'] }],
      ['git_log', { paths: ['notes/../Private/secret.md'] }],
      // A repository below the vault: its paths are relative to it, the rule names vault paths.
      ['git_add', { repo: 'Projects/app', paths: ['../../Private/secret.md'] }],
    ];
    for (const [name, args] of spellings) {
      const result = await run(ex, name, args);
      assert.equal(result.status, 'rejected', `${name} ${JSON.stringify(args)}: ${result.content}`);
      assert.match(result.content, /deny|denied/i);
    }
    assert.equal(git(w.vault, 'diff', '--cached', '--name-only'), '');
    // A nested repository's own Private/ is caught too: rules see the repository-relative path.
    await mkdir(join(sub, 'Private'));
    await writeFile(join(sub, 'Private', 'x.md'), 'x\n');
    const nested = await run(ex, 'git_add', { repo: 'Projects/app', paths: ['Private/x.md'] });
    assert.equal(nested.status, 'rejected', nested.content);
    const other = await run(ex, 'git_add', {
      repo: 'Projects/app',
      paths: ['./Private/../Private/x.md'],
    });
    assert.equal(other.status, 'rejected', other.content);
  });

  it('runs calls on the canonical paths, repository-relative, and leaves pathspec magic literal', async () => {
    const ex = await executor();
    await writeFile(join(w.vault, 'notes', 'b.md'), 'b\n');
    await writeFile(join(w.vault, ':(top)x.md'), 'literal name\n');
    const added = await run(ex, 'git_add', {
      paths: ['notes/../notes/./b.md', join(w.vault, ':(top)x.md')],
    });
    assert.equal(added.status, 'success', added.content);
    assert.deepEqual(
      git(w.vault, 'diff', '--cached', '--name-only').split('\n').filter(Boolean).sort(),
      [':(top)x.md', 'notes/b.md'],
    );
    // Magic is a name, never a pathspec: `:(top)` or `:/` from a nested folder adds nothing else.
    await writeFile(join(w.vault, 'notes', 'c.md'), 'c\n');
    const magic = await run(ex, 'git_add', { paths: [':/notes', ':(glob)**'] });
    assert.equal(magic.status, 'error', magic.content);
    assert.doesNotMatch(git(w.vault, 'diff', '--cached', '--name-only'), /c\.md/);
  });
});
