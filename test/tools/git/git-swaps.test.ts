// Hostile agents that change a repository between vaultd's look at it and git's use of it: a
// config that answers each reader differently, a local remote whose own config runs programs, a
// push URL, HEAD or the repository itself changed after the decision. Each replays a red-team
// reproduction (round 2) with real repositories.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, cp, mkdir, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { changedBasis } from '../../../src/pipeline/preview.ts';
import { rejectsWith } from '../helpers.ts';
import { git, makeWorld, type GitWorld } from './harness.ts';

describe('git pack: changes between the look and the use', { timeout: 60_000 }, () => {
  let w: GitWorld;
  let feeder: ChildProcess | undefined;
  beforeEach(async () => {
    w = await makeWorld();
  });
  afterEach(async () => {
    if (feeder?.pid !== undefined) {
      try {
        process.kill(-feeder.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    feeder = undefined;
    await w.cleanup();
  });

  it('refuses a config that includes a FIFO, so no filter it feeds later runs on git_add', async () => {
    const v = w.vault;
    const marker = join(w.base, 'pwned-filter');
    const fifo = join(v, 'inc.cfg');
    await writeFile(join(v, '.gitattributes'), '*.txt filter=x\n');
    await writeFile(join(v, 'notes', 'b.txt'), 'two\n');
    await appendFile(join(v, '.git', 'config'), '[include]\n\tpath = ../inc.cfg\n');
    // The agent's feeder: the first reader gets nothing, every later one a clean filter.
    feeder = spawn(
      'bash',
      [
        '-c',
        `mkfifo '${fifo}'; printf '' > '${fifo}'; while :; do printf '[filter "x"]\\n\\tclean = "touch ${marker}; cat"\\n' > '${fifo}'; done`,
      ],
      { detached: true, stdio: 'ignore' },
    );
    for (let i = 0; i < 100 && !existsSync(fifo); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const error = await rejectsWith(
      w.call('git_add', { paths: ['notes/b.txt'] }),
      'PERMISSION_DENIED',
    );
    assert.match(error.message, /includes other files/);
    assert.equal(existsSync(marker), false);
  });

  it('refuses include and includeIf entries that name regular files too', async () => {
    const included = join(w.base, 'plain.cfg');
    await writeFile(included, '[core]\n\tquotePath = false\n');
    git(w.vault, 'config', 'include.path', included);
    await rejectsWith(w.call('git_status', {}), 'PERMISSION_DENIED');
    git(w.vault, 'config', '--unset', 'include.path');
    await w.call('git_status', {});
    git(w.vault, 'config', 'includeIf.onbranch:main.path', included);
    await rejectsWith(w.call('git_status', {}), 'PERMISSION_DENIED');
  });

  it('pushes to a local remote without running its core.alternateRefsCommand', async () => {
    const marker = join(w.base, 'pwned-alternate-refs');
    const lib = join(w.remotes, 'lib.git');
    const backup = join(w.remotes, 'backup.git');
    git(w.base, 'init', '-q', '--bare', lib);
    git(w.base, 'init', '-q', '--bare', backup);
    await writeFile(join(backup, 'objects', 'info', 'alternates'), `${join(lib, 'objects')}\n`);
    git(backup, 'config', 'core.alternateRefsCommand', `touch ${marker}; true`);
    git(backup, 'config', 'receive.autogc', 'true');
    git(w.vault, 'remote', 'add', 'backup', backup);
    const pushed = (await w.call('git_push', { remote: 'backup', branch: 'main' })) as {
      commit: string;
    };
    assert.equal(git(backup, 'rev-parse', 'main').trim(), pushed.commit);
    assert.equal(existsSync(marker), false);
  });

  it('asks again when the push URL changes after the preview', async () => {
    const drop = join(w.remotes, 'drop.git');
    git(w.base, 'init', '-q', '--bare', drop);
    await writeFile(join(w.vault, 'notes', 'a.md'), 'secret\n');
    git(w.vault, 'commit', '-q', '-am', 'secret');
    const preview = await w.preview('git_push', { remote: 'origin', branch: 'main' });
    assert.deepEqual(await changedBasis(preview.basis), []);
    git(w.vault, 'remote', 'set-url', 'origin', drop);
    const stale = await changedBasis(preview.basis);
    assert.ok(stale.includes(join(w.vault, '.git', 'config')), stale.join(', '));
    // A pushurl or an insteadOf changes the same file.
    git(w.vault, 'remote', 'set-url', 'origin', join(w.remotes, 'remote.git'));
    const again = await w.preview('git_push', { remote: 'origin', branch: 'main' });
    git(w.vault, 'config', `url.${drop}.pushInsteadOf`, join(w.remotes, 'remote.git'));
    assert.notDeepEqual(await changedBasis(again.basis), []);
  });

  it('asks again when a local remote is moved, replaced or swapped for a link after the preview', async () => {
    const remote = join(w.remotes, 'remote.git');
    const drop = join(w.remotes, 'drop.git');
    git(w.base, 'init', '-q', '--bare', '-b', 'main', drop);
    await writeFile(join(w.vault, 'notes', 'a.md'), 'secret\n');
    git(w.vault, 'commit', '-q', '-am', 'secret');
    const moved = join(w.remotes, 'moved.git');
    const swaps: [string, () => Promise<void>, () => Promise<void>][] = [
      [
        'a link to another repository',
        async () => {
          await rename(remote, moved);
          await symlink(drop, remote);
        },
        async () => {
          await unlink(remote);
          await rename(moved, remote);
        },
      ],
      [
        'another repository renamed over it',
        async () => {
          await rename(remote, moved);
          await cp(drop, remote, { recursive: true });
        },
        async () => {
          await rm(remote, { recursive: true });
          await rename(moved, remote);
        },
      ],
    ];
    for (const [what, swap, undo] of swaps) {
      const preview = await w.preview('git_push', { remote: 'origin', branch: 'main' });
      assert.match(preview.text, /Local repository pushed to: remotes\/remote\.git|remote\.git/);
      assert.deepEqual(await changedBasis(preview.basis), [], what);
      await swap();
      // The URL text and the repository's config are unchanged: only where the path leads is.
      assert.deepEqual(await changedBasis(preview.basis), [remote], what);
      await undo();
      assert.deepEqual(await changedBasis(preview.basis), [], what);
    }
    // A remote that is a link already when the preview is made is shown where it leads.
    await rename(remote, moved);
    await symlink(moved, remote);
    const linked = await w.preview('git_push', { remote: 'origin', branch: 'main' });
    assert.match(linked.text, /Local repository pushed to: .*moved\.git/);
  });

  it('never commits in another repository than the scratch one the gate saw', async () => {
    w.config = { scratch_repos: ['scratch/sub'] };
    const sub = join(w.vault, 'scratch', 'sub');
    await mkdir(sub, { recursive: true });
    git(w.base, 'init', '-q', '-b', 'main', sub);
    await writeFile(join(sub, 's.txt'), 'x\n');
    git(sub, 'add', 's.txt');
    const args = { repo: 'scratch/sub', message: 'scratch work' };
    const effects = await w.effects('git_commit', args);
    assert.equal(effects.safety, 'cautious');
    // The agent, while the call waits for a slot: a removal staged in the vault, the scratch
    // repository's .git moved away.
    git(w.vault, 'rm', '-q', '--cached', 'notes/a.md');
    const before = git(w.vault, 'rev-parse', 'HEAD').trim();
    await rename(join(sub, '.git'), join(sub, '.git-gone'));
    await rejectsWith(w.call('git_commit', args, effects), 'PERMISSION_DENIED');
    assert.equal(git(w.vault, 'rev-parse', 'HEAD').trim(), before);
    // Put back, the scratch commit runs without a human as before.
    await rename(join(sub, '.git-gone'), join(sub, '.git'));
    await w.call('git_commit', args, effects);
    assert.equal(git(sub, 'log', '-1', '--format=%s').trim(), 'scratch work');
  });

  it('asks again when HEAD moves to another branch after the preview of a commit', async () => {
    git(w.vault, 'branch', 'release');
    await writeFile(join(w.vault, 'notes', 'a.md'), 'fix\n');
    git(w.vault, 'add', 'notes/a.md');
    const preview = await w.preview('git_commit', { message: 'small fix' });
    assert.match(preview.text, /Commit to main/);
    assert.deepEqual(await changedBasis(preview.basis), []);
    await writeFile(join(w.vault, '.git', 'HEAD'), 'ref: refs/heads/release\n');
    assert.deepEqual(await changedBasis(preview.basis), [join(w.vault, '.git', 'HEAD')]);
  });

  it('asks again when HEAD moves to another branch after the preview of a push that names none', async () => {
    git(w.vault, 'branch', 'other');
    git(w.vault, 'switch', '-q', 'other');
    await writeFile(join(w.vault, 'notes', 'a.md'), 'private\n');
    git(w.vault, 'commit', '-q', '-am', 'not for the remote');
    git(w.vault, 'switch', '-q', 'main');
    const preview = await w.preview('git_push', {});
    assert.match(preview.text, /^Push main /);
    assert.deepEqual(await changedBasis(preview.basis), []);
    // A git_checkout in a clean tree is cautious: it runs without a human while the push waits.
    await w.call('git_checkout', { ref: 'other' });
    assert.deepEqual(await changedBasis(preview.basis), [join(w.vault, '.git', 'HEAD')]);
    // A push naming its branch does not depend on HEAD.
    const named = await w.preview('git_push', { branch: 'main' });
    git(w.vault, 'switch', '-q', 'main');
    assert.deepEqual(await changedBasis(named.basis), []);
  });
});
