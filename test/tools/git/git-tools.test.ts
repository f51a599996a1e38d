// The git tools on real repositories: a vault that is a repository and a bare remote on disk.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { rejectsWith } from '../helpers.ts';
import { git, makeWorld, type GitWorld } from './harness.ts';

interface Commit {
  hash: string;
  author: string;
  email: string;
  date: string;
  subject: string;
}

describe('git pack tools', { timeout: 60_000 }, () => {
  let w: GitWorld;
  beforeEach(async () => {
    w = await makeWorld();
  });
  afterEach(async () => {
    await w.cleanup();
  });

  it('git_status reports the branch and each changed, staged and untracked file', async () => {
    await writeFile(join(w.vault, 'README.md'), '# Vault\nchanged\n');
    await writeFile(join(w.vault, 'notes', 'b.md'), 'beta\n');
    await writeFile(join(w.vault, 'notes', 'a.md'), 'alpha 2\n');
    git(w.vault, 'add', 'notes/a.md');
    const status = (await w.call('git_status', {})) as {
      branch: string;
      clean: boolean;
      files: { path: string; status: string; staged: boolean }[];
    };
    assert.equal(status.branch, 'main');
    assert.equal(status.clean, false);
    const byPath = Object.fromEntries(status.files.map((f) => [f.path, f]));
    assert.equal(byPath['README.md']?.status, 'modified');
    assert.equal(byPath['README.md']?.staged, false);
    assert.equal(byPath['notes/a.md']?.staged, true);
    assert.equal(byPath['notes/b.md']?.status, 'untracked');
    assert.deepEqual((await w.effects('git_status', {})).safety, 'safe');
  });

  it('git_diff shows the working tree, the staged changes and a range, limited to paths', async () => {
    await writeFile(join(w.vault, 'README.md'), '# Vault\nmore\n');
    await writeFile(join(w.vault, 'notes', 'a.md'), 'alpha 2\n');
    const all = (await w.call('git_diff', {})) as { diff: string; files: { path: string }[] };
    assert.match(all.diff, /^\+more$/m);
    assert.deepEqual(all.files.map((f) => f.path).sort(), ['README.md', 'notes/a.md']);
    const one = (await w.call('git_diff', { paths: ['notes'] })) as { diff: string };
    assert.doesNotMatch(one.diff, /more/);
    assert.match(one.diff, /^\+alpha 2$/m);
    git(w.vault, 'add', 'README.md');
    const staged = (await w.call('git_diff', { staged: true })) as { files: { path: string }[] };
    assert.deepEqual(
      staged.files.map((f) => f.path),
      ['README.md'],
    );
    git(w.vault, 'commit', '-q', '-m', 'second');
    const range = (await w.call('git_diff', { ref: 'HEAD~1..HEAD' })) as { diff: string };
    assert.match(range.diff, /^\+more$/m);
  });

  it('git_log returns structured commits, newest first, limited and by path', async () => {
    await writeFile(join(w.vault, 'notes', 'a.md'), 'alpha 2\n');
    git(w.vault, 'commit', '-q', '-am', 'change a');
    await writeFile(join(w.vault, 'README.md'), 'x\n');
    git(w.vault, 'commit', '-q', '-am', 'change readme');
    const log = (await w.call('git_log', {})) as { commits: Commit[] };
    assert.deepEqual(
      log.commits.map((c) => c.subject),
      ['change readme', 'change a', 'initial'],
    );
    const first = log.commits[0];
    assert.match(first?.hash ?? '', /^[0-9a-f]{40}$/);
    assert.equal(first?.author, 'Test');
    assert.equal(first?.email, 'test@example.com');
    assert.ok(!Number.isNaN(Date.parse(first?.date ?? '')));
    const limited = (await w.call('git_log', { limit: 1 })) as { commits: Commit[] };
    assert.equal(limited.commits.length, 1);
    const byPath = (await w.call('git_log', { paths: ['notes/a.md'] })) as { commits: Commit[] };
    assert.deepEqual(
      byPath.commits.map((c) => c.subject),
      ['change a', 'initial'],
    );
    const range = (await w.call('git_log', { ref: 'HEAD~1..' })) as { commits: Commit[] };
    assert.deepEqual(
      range.commits.map((c) => c.subject),
      ['change readme'],
    );
  });

  it('git_show returns one commit with its message, files and diff', async () => {
    await writeFile(join(w.vault, 'notes', 'a.md'), 'alpha 2\n');
    git(w.vault, 'commit', '-q', '-am', 'change a\n\nwith a body');
    const shown = (await w.call('git_show', { ref: 'HEAD' })) as {
      commit: { subject: string; body: string; parents: string[] };
      files: { path: string; added: number }[];
      diff: string;
    };
    assert.equal(shown.commit.subject, 'change a');
    assert.match(shown.commit.body, /with a body/);
    assert.equal(shown.commit.parents.length, 1);
    assert.deepEqual(shown.files, [{ path: 'notes/a.md', added: 1, deleted: 1 }]);
    assert.match(shown.diff, /^\+alpha 2$/m);
    const unknown = await rejectsWith(w.call('git_show', { ref: 'nope' }), 'INVALID_PARAMS');
    assert.equal((unknown.data as { reason: string }).reason, 'unknown_ref');
  });

  it('git_branch lists safely and creates cautiously', async () => {
    assert.equal((await w.effects('git_branch', {})).safety, 'safe');
    assert.equal((await w.effects('git_branch', {})).readOnly, true);
    const creating = await w.effects('git_branch', { name: 'feature', create: true });
    assert.equal(creating.safety, 'cautious');
    assert.equal(creating.readOnly, false);
    const created = (await w.call('git_branch', { name: 'feature/x', create: true })) as {
      created: string;
    };
    assert.equal(created.created, 'feature/x');
    const list = (await w.call('git_branch', {})) as {
      current: string;
      branches: { name: string; current: boolean }[];
    };
    assert.equal(list.current, 'main');
    assert.deepEqual(list.branches.map((b) => b.name).sort(), ['feature/x', 'main']);
    const again = await rejectsWith(
      w.call('git_branch', { name: 'feature/x', create: true }),
      'EXECUTION_FAILED',
    );
    assert.match(again.message, /already exists/);
  });

  it('git_checkout is cautious on a clean tree, dangerous on a dirty one, and switches', async () => {
    git(w.vault, 'branch', 'other');
    assert.equal((await w.effects('git_checkout', { ref: 'other' })).safety, 'cautious');
    await writeFile(join(w.vault, 'README.md'), 'dirty\n');
    const dirty = await w.effects('git_checkout', { ref: 'other' });
    assert.equal(dirty.safety, 'dangerous');
    assert.match(dirty.reason ?? '', /uncommitted changes/);
    const preview = await w.preview('git_checkout', { ref: 'other' });
    assert.match(preview.text, /README\.md/);
    const switched = (await w.call('git_checkout', { ref: 'other' })) as { branch: string };
    assert.equal(switched.branch, 'other');
    assert.equal(await readFile(join(w.vault, 'README.md'), 'utf8'), 'dirty\n');
    const hash = git(w.vault, 'rev-parse', 'HEAD').trim();
    const detached = (await w.call('git_checkout', { ref: hash })) as {
      detached: boolean;
      commit: string;
    };
    assert.equal(detached.detached, true);
    assert.equal(detached.commit, hash);
  });

  it('git_checkout refuses to overwrite uncommitted changes, with a reason', async () => {
    git(w.vault, 'switch', '-q', '-c', 'other');
    await writeFile(join(w.vault, 'README.md'), 'on other\n');
    git(w.vault, 'commit', '-q', '-am', 'other readme');
    git(w.vault, 'switch', '-q', 'main');
    await writeFile(join(w.vault, 'README.md'), 'local edit\n');
    const error = await rejectsWith(w.call('git_checkout', { ref: 'other' }), 'EXECUTION_FAILED');
    assert.equal((error.data as { reason: string }).reason, 'local_changes');
    assert.equal(await readFile(join(w.vault, 'README.md'), 'utf8'), 'local edit\n');
  });

  it('git_add stages and git_commit commits as the configured author, with a preview', async () => {
    w.config = { author: { name: 'Agent Smith', email: 'agent@example.org' } };
    await writeFile(join(w.vault, 'notes', 'b.md'), 'beta\n');
    assert.equal((await w.effects('git_add', { paths: ['notes/b.md'] })).safety, 'cautious');
    const added = (await w.call('git_add', { paths: ['notes/b.md'] })) as {
      staged: { path: string }[];
    };
    assert.deepEqual(
      added.staged.map((f) => f.path),
      ['notes/b.md'],
    );
    assert.equal((await w.effects('git_commit', { message: 'add b' })).safety, 'dangerous');
    const preview = await w.preview('git_commit', { message: 'add b\n\nbecause' });
    assert.match(preview.text, /notes\/b\.md/);
    assert.match(preview.text, /add b/);
    assert.match(preview.text, /Agent Smith <agent@example\.org>/);
    assert.ok(
      preview.basis?.some((b) => b.path.endsWith(join('.git', 'index')) && b.sha256 !== null),
    );
    const committed = (await w.call('git_commit', { message: 'add b\n\nbecause' })) as {
      commit: string;
      files: { path: string }[];
    };
    assert.deepEqual(
      committed.files.map((f) => f.path),
      ['notes/b.md'],
    );
    assert.equal(
      git(w.vault, 'log', '-1', '--format=%an <%ae>|%cn|%s').trim(),
      'Agent Smith <agent@example.org>|Agent Smith|add b',
    );
    const nothing = await rejectsWith(
      w.call('git_commit', { message: 'again' }),
      'EXECUTION_FAILED',
    );
    assert.equal((nothing.data as { reason: string }).reason, 'nothing_to_commit');
  });

  it('git_commit with paths commits just those files; the default author is vaultd', async () => {
    await writeFile(join(w.vault, 'notes', 'a.md'), 'alpha 2\n');
    await writeFile(join(w.vault, 'README.md'), 'not this\n');
    const done = (await w.call('git_commit', { message: 'only a', paths: ['notes/a.md'] })) as {
      files: { path: string }[];
    };
    assert.deepEqual(
      done.files.map((f) => f.path),
      ['notes/a.md'],
    );
    assert.equal(
      git(w.vault, 'log', '-1', '--format=%an <%ae>').trim(),
      'vaultd <vaultd@localhost>',
    );
    assert.match(git(w.vault, 'status', '--porcelain'), /README\.md/);
  });

  it('git_commit is cautious in a configured scratch repository', async () => {
    w.config = { scratch_repos: ['.'] };
    assert.equal((await w.effects('git_commit', { message: 'x' })).safety, 'cautious');
    w.config = { scratch_repos: ['notes'] };
    assert.equal((await w.effects('git_commit', { message: 'x' })).safety, 'dangerous');
  });

  it('git_commit with unresolved conflicts is a merge_conflict error', async () => {
    git(w.vault, 'switch', '-q', '-c', 'other');
    await writeFile(join(w.vault, 'README.md'), 'theirs\n');
    git(w.vault, 'commit', '-q', '-am', 'theirs');
    git(w.vault, 'switch', '-q', 'main');
    await writeFile(join(w.vault, 'README.md'), 'ours\n');
    git(w.vault, 'commit', '-q', '-am', 'ours');
    assert.throws(() => git(w.vault, 'merge', 'other'));
    const status = (await w.call('git_status', {})) as { files: { status: string }[] };
    assert.equal(status.files[0]?.status, 'conflicted');
    const error = await rejectsWith(w.call('git_commit', { message: 'merge' }), 'EXECUTION_FAILED');
    assert.equal((error.data as { reason: string }).reason, 'merge_conflict');
  });

  it('a write whose call will be refused tells the human so in its preview, not "no preview"', async () => {
    const unknownRemote = await w.preview('git_push', { remote: 'upstream' });
    assert.match(unknownRemote.text, /^This call will fail: .*upstream/);
    const force = await w.preview('git_push', { force: true });
    assert.match(force.text, /^This call will fail: force pushes are off/);
    const checkout = await w.preview('git_checkout', { ref: 'nope' });
    assert.match(checkout.text, /^This call will fail: nope names no commit/);
    const commit = await w.preview('git_commit', { repo: '../outside', message: 'x' });
    assert.match(commit.text, /^This call will fail: /);
  });

  it('git_push is dangerous, previews the commits it would push, and pushes them', async () => {
    await writeFile(join(w.vault, 'notes', 'a.md'), 'alpha 2\n');
    git(w.vault, 'commit', '-q', '-am', 'first unpushed');
    await writeFile(join(w.vault, 'notes', 'a.md'), 'alpha 3\n');
    git(w.vault, 'commit', '-q', '-am', 'second unpushed');
    assert.equal((await w.effects('git_push', {})).safety, 'dangerous');
    const preview = await w.preview('git_push', {});
    assert.match(preview.text, /second unpushed/);
    assert.match(preview.text, /first unpushed/);
    assert.doesNotMatch(preview.text, /initial/);
    const pushed = (await w.call('git_push', { remote: 'origin', branch: 'main' })) as {
      pushed: { subject: string }[];
    };
    assert.deepEqual(
      pushed.pushed.map((c) => c.subject),
      ['second unpushed', 'first unpushed'],
    );
    const remote = join(w.remotes, 'remote.git');
    assert.equal(git(remote, 'log', '-1', '--format=%s', 'main').trim(), 'second unpushed');
    const again = await w.preview('git_push', {});
    assert.match(again.text, /\(none/);
  });

  it('a rejected (non-fast-forward) push is a push_rejected error; force needs the operator', async () => {
    const other = join(w.base, 'other');
    git(w.base, 'clone', '-q', join(w.remotes, 'remote.git'), other);
    await writeFile(join(other, 'README.md'), 'from elsewhere\n');
    git(other, 'commit', '-q', '-am', 'elsewhere');
    git(other, 'push', '-q', 'origin', 'main');
    await writeFile(join(w.vault, 'README.md'), 'here\n');
    git(w.vault, 'commit', '-q', '-am', 'here');
    const error = await rejectsWith(w.call('git_push', {}), 'EXECUTION_FAILED');
    assert.equal((error.data as { reason: string }).reason, 'push_rejected');
    await rejectsWith(w.call('git_push', { force: true }), 'PERMISSION_DENIED');
    const remote = join(w.remotes, 'remote.git');
    assert.equal(git(remote, 'log', '-1', '--format=%s', 'main').trim(), 'elsewhere');
  });

  it('cuts a long diff with a marker and says so', async () => {
    await writeFile(join(w.vault, 'big.txt'), `${'x'.repeat(100)}\n`.repeat(3000));
    git(w.vault, 'add', 'big.txt');
    const diff = (await w.call('git_diff', { staged: true })) as {
      diff: string;
      truncated: boolean;
    };
    assert.equal(diff.truncated, true);
    assert.ok(diff.diff.length < 130_000);
    assert.match(diff.diff, /more characters not shown\]$/);
  });

  it('committing a path git does not know is an unknown_path error', async () => {
    const error = await rejectsWith(
      w.call('git_commit', { message: 'x', paths: ['notes/none.md'] }),
      'EXECUTION_FAILED',
    );
    assert.equal((error.data as { reason: string }).reason, 'unknown_path');
  });
});
