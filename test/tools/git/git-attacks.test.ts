// Hostile agents and hostile repositories: option injection through refs, names and paths,
// repositories outside the roots (directly, through links, `.git` files and borrowed object
// stores), and repository config that would run programs. The patterns of the advisories against
// the reference MCP git server (CVE-2025-68143/68144/68145) are replayed here.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { rejectsWith } from '../helpers.ts';
import { git, makeWorld, type GitWorld } from './harness.ts';

describe('git pack: option injection', { timeout: 60_000 }, () => {
  let w: GitWorld;
  before(async () => {
    w = await makeWorld();
    git(w.vault, 'branch', 'other');
  });
  after(async () => {
    await w.cleanup();
  });

  const pwned = (): string => join(w.outside, 'pwned');

  it('refuses refs that git would read as options, paths or searches', async () => {
    const bad = [
      `--output=${'/tmp/vaultd-git-pwned'}`,
      '--upload-pack=touch /tmp/vaultd-git-pwned',
      '-c',
      '-cprotocol.ext.allow=always',
      '--exec=touch /tmp/vaultd-git-pwned',
      '-p',
      'HEAD:README.md',
      ':/initial',
      'main;touch /tmp/x',
      'main\nHEAD',
      'HEAD..--output=/tmp/x',
      '$(touch /tmp/x)',
    ];
    for (const ref of bad) {
      for (const [tool, args] of [
        ['git_log', { ref }],
        ['git_diff', { ref }],
        ['git_show', { ref }],
        ['git_checkout', { ref }],
        ['git_branch', { create: true, name: 'ok', start_point: ref }],
      ] as const) {
        await rejectsWith(w.call(tool, args), 'INVALID_PARAMS');
      }
    }
    assert.equal(existsSync('/tmp/vaultd-git-pwned'), false);
    assert.deepEqual(
      git(w.vault, 'branch', '--format=%(refname:short)').trim().split('\n').sort(),
      ['main', 'other'],
    );
  });

  it('refuses branch and remote names that are options or refspecs', async () => {
    for (const name of [
      '-D',
      '--force',
      '-f',
      '+main',
      'main:other',
      'a..b',
      'x.lock',
      'HEAD',
      '@{1}',
      'a b',
    ]) {
      await rejectsWith(w.call('git_branch', { create: true, name }), 'INVALID_PARAMS');
      await rejectsWith(w.call('git_push', { branch: name }), 'INVALID_PARAMS');
    }
    for (const remote of [
      `--receive-pack=touch ${pwned()}`,
      `--exec=touch ${pwned()}`,
      '-o',
      'origin:x',
      '/tmp/elsewhere.git',
      `file://${w.outside}`,
      'nosuchremote',
    ]) {
      await rejectsWith(w.call('git_push', { remote }), 'INVALID_PARAMS');
    }
    assert.equal(existsSync(pwned()), false);
  });

  it('passes paths after -- as literal pathspecs: an option-like path is just a name', async () => {
    const out = (await w.call('git_diff', { paths: [`--output=${pwned()}`] })) as { diff: string };
    assert.equal(out.diff, '');
    const log = (await w.call('git_log', { paths: ['-p', '*'] })) as { commits: unknown[] };
    assert.deepEqual(log.commits, []);
    assert.equal(existsSync(pwned()), false);
  });

  it('refuses paths outside the repository, the roots, or in protected folders', async () => {
    await rejectsWith(w.call('git_add', { paths: ['../outside/x'] }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_diff', { paths: ['/etc/passwd'] }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_log', { paths: [`${w.vault}/../outside`] }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_add', { paths: ['.vaultd/grants.json'] }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_add', { paths: ['.git/config'] }), 'PERMISSION_DENIED');
    await rejectsWith(
      w.call('git_commit', { message: 'x', paths: ['In_Progress/note.md'] }),
      'PERMISSION_DENIED',
    );
    await symlink(w.outside, join(w.vault, 'escape'));
    await rejectsWith(w.call('git_add', { paths: ['escape/file'] }), 'PERMISSION_DENIED');
  });

  it('leaves vaultd state out of a whole-tree add even when it is not ignored', async () => {
    await writeFile(join(w.vault, '.gitignore'), '');
    await writeFile(join(w.vault, '.vaultd', 'grants.json'), '{"secret": true}\n');
    const added = (await w.call('git_add', { paths: ['.'] })) as { staged: { path: string }[] };
    assert.ok(added.staged.length > 0);
    assert.ok(
      added.staged.every((f) => !f.path.startsWith('.vaultd/')),
      JSON.stringify(added),
    );
    git(w.vault, 'reset', '-q');
    await writeFile(join(w.vault, '.gitignore'), '.vaultd/\n');
  });
  it('never shows vaultd state from history, even when it is ignored now', async () => {
    await writeFile(join(w.vault, '.vaultd', 'grants.json'), '{"secret": true}\n');
    git(w.vault, 'add', '-f', '.vaultd/grants.json', 'README.md');
    git(w.vault, 'commit', '-q', '-m', 'state slipped in');
    const shown = (await w.call('git_show', { ref: 'HEAD' })) as {
      files: unknown[];
      diff: string;
    };
    assert.deepEqual(shown.files, []);
    assert.doesNotMatch(shown.diff, /secret/);
    const diff = (await w.call('git_diff', { ref: 'HEAD~1..HEAD' })) as { diff: string };
    assert.doesNotMatch(diff.diff, /secret/);
    const log = (await w.call('git_log', { paths: ['.'] })) as { commits: { subject: string }[] };
    assert.ok(!log.commits.some((c) => c.subject === 'state slipped in'));
    await rejectsWith(w.call('git_log', { paths: ['.vaultd'] }), 'PERMISSION_DENIED');
  });
});

describe('git pack: repositories only inside the roots', { timeout: 60_000 }, () => {
  let w: GitWorld;
  let foreign: string;
  beforeEach(async () => {
    w = await makeWorld();
    foreign = join(w.outside, 'repo');
    await mkdir(foreign);
    git(foreign, 'init', '-q', '-b', 'main');
    await writeFile(join(foreign, 'secret.txt'), 'secret\n');
    git(foreign, 'add', '.');
    git(foreign, 'commit', '-q', '-m', 'secret commit');
  });
  afterEach(async () => {
    await w.cleanup();
  });

  it('refuses a repository path outside the roots, absolute or relative', async () => {
    await rejectsWith(w.call('git_status', { repo: foreign }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_log', { repo: '../outside/repo' }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_status', { repo: '/' }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_commit', { repo: '/tmp', message: 'x' }), 'PERMISSION_DENIED');
  });

  it('refuses a linked folder, a linked .git and a .git file that lead outside', async () => {
    await symlink(foreign, join(w.vault, 'linked'));
    await rejectsWith(w.call('git_log', { repo: 'linked' }), 'PERMISSION_DENIED');
    await mkdir(join(w.vault, 'sub'));
    await symlink(join(foreign, '.git'), join(w.vault, 'sub', '.git'));
    await rejectsWith(w.call('git_log', { repo: 'sub' }), 'PERMISSION_DENIED');
    await mkdir(join(w.vault, 'sub2'));
    await writeFile(join(w.vault, 'sub2', '.git'), `gitdir: ${join(foreign, '.git')}\n`);
    await rejectsWith(w.call('git_log', { repo: 'sub2' }), 'PERMISSION_DENIED');
    await rejectsWith(w.call('git_status', { repo: 'sub2' }), 'PERMISSION_DENIED');
    await mkdir(join(w.vault, 'sub3'));
    await writeFile(join(w.vault, 'sub3', '.git'), 'gitdir: ../../outside/repo/.git\n');
    await rejectsWith(w.call('git_show', { repo: 'sub3' }), 'PERMISSION_DENIED');
  });

  it('accepts a .git file that names a git folder inside the roots (a linked worktree)', async () => {
    git(w.vault, 'worktree', 'add', '-q', join(w.remotes, 'wt'), '-b', 'wt');
    const status = (await w.call('git_status', { repo: join(w.remotes, 'wt') })) as {
      branch: string;
    };
    assert.equal(status.branch, 'wt');
  });

  it('refuses a repository whose objects, refs or config are links leading outside', async () => {
    for (const entry of ['objects', 'refs', 'config']) {
      const repo = join(w.vault, `linked-${entry}`);
      await mkdir(repo);
      git(repo, 'init', '-q', '-b', 'main');
      await rm(join(repo, '.git', entry), { recursive: true, force: true });
      await symlink(join(foreign, '.git', entry), join(repo, '.git', entry));
      await rejectsWith(w.call('git_log', { repo: `linked-${entry}` }), 'PERMISSION_DENIED');
      await rejectsWith(
        w.call('git_add', { repo: `linked-${entry}`, paths: ['.'] }),
        'PERMISSION_DENIED',
      );
    }
  });

  it('refuses a git folder whose index, config, refs, commondir or alternates is a FIFO instead of hanging', async () => {
    for (const file of [
      'commondir',
      join('objects', 'info', 'alternates'),
      'index',
      'packed-refs',
      'config',
    ]) {
      const repo = join(w.vault, `fifo-${file.replace(/\W/g, '-')}`);
      await mkdir(repo);
      git(repo, 'init', '-q', '-b', 'main');
      await rm(join(repo, '.git', file), { force: true });
      execFileSync('mkfifo', [join(repo, '.git', file)]);
      await rejectsWith(w.call('git_status', { repo }), 'INVALID_PARAMS');
    }
  });

  it('never searches upward past a root', async () => {
    git(w.base, 'init', '-q', '-b', 'main');
    const error = await rejectsWith(w.call('git_status', { repo: w.remotes }), 'INVALID_PARAMS');
    assert.equal((error.data as { reason: string }).reason, 'not_a_repository');
  });

  it('refuses a repository that borrows objects from outside the roots', async () => {
    const alt = join(w.vault, 'alt');
    await mkdir(alt);
    git(alt, 'init', '-q', '-b', 'main');
    await writeFile(
      join(alt, '.git', 'objects', 'info', 'alternates'),
      `${join(foreign, '.git', 'objects')}\n`,
    );
    await rejectsWith(w.call('git_log', { repo: 'alt' }), 'PERMISSION_DENIED');
  });

  it('refuses a checkout that would write a git folder into the tree, or write into one', async () => {
    // A branch whose tree holds a bare repository's shape (HEAD, objects/, refs/, config, a hook):
    // checked out, a person's git takes trap/ for a repository and uses its config and hooks.
    const v = w.vault;
    git(v, 'switch', '-q', '-c', 'trap');
    await mkdir(join(v, 'trap', 'objects'), { recursive: true });
    await mkdir(join(v, 'trap', 'refs'), { recursive: true });
    await mkdir(join(v, 'trap', 'hooks'), { recursive: true });
    await writeFile(join(v, 'trap', 'objects', 'keep'), '');
    await writeFile(join(v, 'trap', 'refs', 'keep'), '');
    await writeFile(join(v, 'trap', 'HEAD'), 'ref: refs/heads/main\n');
    await writeFile(join(v, 'trap', 'config'), '[core]\n\tbare = true\n');
    await writeFile(join(v, 'trap', 'hooks', 'post-update'), '#!/bin/sh\ntouch pwned\n');
    git(v, 'add', 'trap');
    git(v, 'commit', '-q', '-m', 'a repository in the tree');
    git(v, 'switch', '-q', 'main');
    assert.equal(existsSync(join(v, 'trap')), false);
    const byName = await rejectsWith(w.call('git_checkout', { ref: 'trap' }), 'PERMISSION_DENIED');
    assert.match(byName.message, /trap\/HEAD/);
    await rejectsWith(
      w.call('git_checkout', { ref: git(v, 'rev-parse', 'trap').trim() }),
      'PERMISSION_DENIED',
    );
    assert.equal(existsSync(join(v, 'trap')), false);
    assert.equal(git(v, 'branch', '--show-current').trim(), 'main');
    // A branch that adds a hook to a git folder already in the tree (a bare backup the person made).
    git(w.base, 'init', '-q', '--bare', join(v, 'backup.git'));
    git(v, 'switch', '-q', '-c', 'plant');
    await mkdir(join(v, 'plant', 'hooks'), { recursive: true });
    await writeFile(join(v, 'plant', 'hooks', 'post-receive'), '#!/bin/sh\n');
    git(v, 'add', 'plant');
    git(v, 'commit', '-q', '-m', 'x');
    git(v, 'mv', 'plant/hooks', 'backup.git/hooks-new');
    git(v, 'commit', '-q', '-m', 'into the bare repository');
    git(v, 'switch', '-q', 'main');
    const into = await rejectsWith(w.call('git_checkout', { ref: 'plant' }), 'PERMISSION_DENIED');
    assert.match(into.message, /into backup\.git/);
    assert.equal(existsSync(join(v, 'backup.git', 'hooks-new')), false);
    // A plain branch still switches.
    git(v, 'switch', '-q', '-c', 'plain');
    git(v, 'switch', '-q', 'main');
    await w.call('git_checkout', { ref: 'plain' });
    assert.equal(git(v, 'branch', '--show-current').trim(), 'plain');
    git(v, 'switch', '-q', 'main');
  });

  it('refuses to push to a local remote outside the roots', async () => {
    git(w.base, 'init', '-q', '--bare', join(w.outside, 'far.git'));
    git(w.vault, 'remote', 'add', 'far', join(w.outside, 'far.git'));
    await rejectsWith(w.call('git_push', { remote: 'far' }), 'PERMISSION_DENIED');
    // The preview tells the human the call will be refused (it looked nowhere outside the roots).
    assert.match((await w.preview('git_push', { remote: 'far' })).text, /^This call will fail: /);
    assert.equal(git(join(w.outside, 'far.git'), 'for-each-ref').trim(), '');
  });

  it('refuses local remotes git would open elsewhere than the path names (review finding)', async () => {
    // Each of these pushed outside the roots: git ignores a file:// URL's host, reads ~ as a
    // home folder (the pack's own HOME here), and tries <path>/.git, then <path>.git, following
    // links, where vaultd checked <path> alone.
    const far = (name: string): string => {
      const path = join(w.outside, name);
      git(w.base, 'init', '-q', '--bare', path);
      return path;
    };
    const hosted = far('hosted.git');
    const home = join(w.base, 'home', 'far.git');
    git(w.base, 'init', '-q', '--bare', home);
    const suffixed = far('suffixed.git');
    const inside = far('inside.git');
    await mkdir(join(w.vault, 'Scratch', 'plain'), { recursive: true });
    await symlink(suffixed, join(w.vault, 'Scratch', 'r.git'));
    await symlink(inside, join(w.vault, 'Scratch', 'plain', '.git'));
    const remotes: [string, string, string][] = [
      ['hosted', `file://x${hosted}`, 'PERMISSION_DENIED'],
      ['tilde', '~/far.git', 'PERMISSION_DENIED'],
      ['suffixed', join(w.vault, 'Scratch', 'r'), 'INVALID_PARAMS'],
      ['dotgit', join(w.vault, 'Scratch', 'plain'), 'PERMISSION_DENIED'],
      ['escape', 'file:///%E0%A4%A', 'INVALID_PARAMS'],
    ];
    for (const [name, url, code] of remotes) {
      git(w.vault, 'remote', 'add', name, url);
      const preview = await w.preview('git_push', { remote: name, branch: 'main' });
      assert.match(preview.text, /^This call will fail: /, name);
      assert.equal(preview.basis, undefined, name);
      await rejectsWith(w.call('git_push', { remote: name, branch: 'main' }), code);
      git(w.vault, 'remote', 'remove', name);
    }
    for (const repo of [hosted, home, suffixed, inside]) {
      assert.equal(git(repo, 'for-each-ref').trim(), '', repo);
    }
    await rm(join(w.vault, 'Scratch'), { recursive: true, force: true });
  });

  it('pushes to a local repository in the roots, bare or through its .git folder', async () => {
    const bare = join(w.remotes, 'bare.git');
    git(w.base, 'init', '-q', '--bare', bare);
    const work = join(w.remotes, 'work');
    git(w.base, 'init', '-q', work);
    for (const [name, path, gitFolder] of [
      ['bare', bare, bare],
      ['work', work, join(work, '.git')],
    ] as const) {
      git(w.vault, 'remote', 'add', name, path);
      await w.call('git_push', { remote: name, branch: 'main' });
      assert.match(git(gitFolder, 'for-each-ref', '--format=%(refname)'), /refs\/heads\/main/);
      git(w.vault, 'remote', 'remove', name);
    }
  });

  it('never runs an upload-pack the repository names, even for a negotiating push (review finding)', async () => {
    // push.negotiate starts a fetch whose upload-pack came from remote.<url>.uploadpack: a shell
    // command of the agent's choosing, run as vaultd.
    const url = `file://${join(w.remotes, 'remote.git')}`;
    const pwned = (): string => join(w.outside, 'negotiated');
    git(w.vault, 'remote', 'add', 'negotiating', url);
    git(w.vault, 'config', 'push.negotiate', 'true');
    git(w.vault, 'config', `remote.${url}.uploadpack`, `touch ${pwned()}; exec git-upload-pack`);
    git(
      w.vault,
      'config',
      'remote.negotiating.uploadpack',
      `touch ${pwned()}; exec git-upload-pack`,
    );
    try {
      git(w.vault, 'commit', '-q', '--allow-empty', '-m', 'to push');
      await w.call('git_push', { remote: 'negotiating', branch: 'main' });
      assert.equal(existsSync(pwned()), false);
    } finally {
      git(w.vault, 'config', '--unset', 'push.negotiate');
      git(w.vault, 'config', '--remove-section', `remote.${url}`);
      git(w.vault, 'remote', 'remove', 'negotiating');
    }
  });
});

describe(
  'git pack: repository config that would run programs never does',
  { timeout: 120_000 },
  () => {
    let w: GitWorld;
    let markers: string;
    let server: Server;
    let port = 0;
    before(async () => {
      server = createServer((_req, res) => {
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' });
        res.end('no');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    beforeEach(async () => {
      w = await makeWorld();
      markers = join(w.base, 'markers');
      const evil = join(w.base, 'evil');
      await mkdir(markers);
      await mkdir(evil);
      const script = async (name: string, tail = 'cat'): Promise<string> => {
        const path = join(evil, `${name}.sh`);
        await writeFile(path, `#!/bin/sh\ntouch '${join(markers, name)}'\n${tail}\n`);
        await chmod(path, 0o755);
        return path;
      };
      // Content first, with the test's own git, before the config turns hostile.
      const v = w.vault;
      await writeFile(
        join(v, '.gitattributes'),
        '*.md filter=evil diff=evil\n*.txt filter=proc\n*.dat filter=inc\n',
      );
      await writeFile(join(v, 'notes', 'c.txt'), 'c\n');
      await writeFile(join(v, 'notes', 'd.dat'), 'd\n');
      git(v, 'add', '.');
      git(v, 'commit', '-q', '-m', 'attributes');
      git(v, 'branch', 'other');
      git(v, 'switch', '-q', 'other');
      await writeFile(join(v, 'notes', 'a.md'), 'alpha on other\n');
      await writeFile(join(v, 'notes', 'c.txt'), 'c on other\n');
      git(v, 'commit', '-q', '-am', 'other');
      git(v, 'switch', '-q', 'main');
      git(v, 'push', '-q', 'origin', 'main', 'other');
      const set = (key: string, value: string): string => git(v, 'config', key, value);
      set('core.fsmonitor', await script('fsmonitor', 'exit 1'));
      set('core.pager', await script('pager'));
      set('pager.log', await script('pager'));
      set('diff.external', await script('external'));
      set('filter.evil.clean', await script('clean'));
      set('filter.evil.smudge', await script('smudge'));
      set('filter.evil.required', 'true');
      set('filter.proc.process', await script('process', 'exit 1'));
      set('diff.evil.textconv', await script('textconv'));
      set('diff.evil.command', await script('diffcmd'));
      // Includes are refused outright (test/tools/git/git-swaps.test.ts); a driver no config names
      // (`inc`) is simply absent.
      set('commit.gpgSign', 'true');
      set('log.showSignature', 'true');
      set('gpg.program', await script('gpg', 'exit 1'));
      set('core.editor', await script('editor'));
      set('sequence.editor', await script('editor'));
      set('core.askPass', await script('askpass', 'echo secret'));
      set('core.sshCommand', await script('ssh', 'exit 1'));
      set('remote.origin.receivepack', await script('receivepack', 'exit 1'));
      set('remote.origin.uploadpack', await script('uploadpack', 'exit 1'));
      set(
        'credential.helper',
        `!${await script('credential', 'echo username=u; echo password=p')}`,
      );
      set(
        `credential.http://127.0.0.1:${port}.helper`,
        `!${await script('credential-url', 'echo username=u; echo password=p')}`,
      );
      set('protocol.ext.allow', 'always');
      set('protocol.allow', 'always');
      git(v, 'remote', 'add', 'web', `http://127.0.0.1:${port}/repo.git`);
      git(v, 'remote', 'add', 'extr', `ext::sh -c touch% ${join(markers, 'ext')}`);
      for (const hook of [
        'pre-commit',
        'commit-msg',
        'post-commit',
        'post-checkout',
        'pre-push',
        'reference-transaction',
        'post-index-change',
      ]) {
        const path = join(v, '.git', 'hooks', hook);
        await writeFile(path, `#!/bin/sh\ntouch '${join(markers, `hook-${hook}`)}'\nexit 0\n`);
        await chmod(path, 0o755);
      }
      for (const hook of ['pre-receive', 'update', 'post-receive']) {
        const path = join(w.remotes, 'remote.git', 'hooks', hook);
        await writeFile(
          path,
          `#!/bin/sh\ntouch '${join(markers, `remote-hook-${hook}`)}'\nexit 0\n`,
        );
        await chmod(path, 0o755);
      }
      await writeFile(join(v, 'notes', 'a.md'), 'alpha changed\n');
      await writeFile(join(v, 'notes', 'c.txt'), 'c changed\n');
      await writeFile(join(v, 'notes', 'd.dat'), 'd changed\n');
    });
    afterEach(async () => {
      await w.cleanup();
    });

    it('the hostile config works on plain git (the markers can appear)', async () => {
      for (const args of [['add', 'notes/c.txt'], ['diff']]) {
        try {
          git(w.vault, ...args);
        } catch {
          // A failing filter may fail the command: the marker is what counts.
        }
      }
      const seen = await readdir(markers);
      assert.ok(seen.includes('fsmonitor') && seen.includes('process'), seen.join(', '));
    });

    it('no tool runs any of them', async () => {
      await w.call('git_status', {});
      await w.call('git_diff', {});
      await w.call('git_diff', { ref: 'main..other' });
      await w.call('git_log', { ref: 'other' });
      await w.call('git_show', { ref: 'other' });
      await w.call('git_branch', {});
      await w.call('git_branch', { create: true, name: 'made' });
      await w.call('git_add', { paths: ['notes'] });
      await w.preview('git_commit', { message: 'hostile' });
      await w.call('git_commit', { message: 'hostile' });
      await w.effects('git_checkout', { ref: 'other' });
      await w.call('git_checkout', { ref: 'other' });
      await w.call('git_checkout', { ref: 'main' });
      await w.preview('git_push', { branch: 'main' });
      const pushed = (await w.call('git_push', { branch: 'main' })) as { pushed: unknown[] };
      assert.equal(pushed.pushed.length, 1);
      const auth = await rejectsWith(
        w.call('git_push', { remote: 'web', branch: 'main' }),
        'EXECUTION_FAILED',
      );
      assert.equal((auth.data as { reason: string }).reason, 'auth_failed');
      await rejectsWith(
        w.call('git_push', { remote: 'extr', branch: 'main' }),
        'PERMISSION_DENIED',
      );
      assert.deepEqual(await readdir(markers), []);
      assert.equal(
        git(join(w.remotes, 'remote.git'), 'log', '-1', '--format=%s', 'main').trim(),
        'hostile',
      );
    });

    it('hooks run when the operator turns them on', async () => {
      w.config = { run_hooks: true };
      await w.call('git_add', { paths: ['notes/a.md'] });
      await w.call('git_commit', { message: 'with hooks' });
      const seen = await readdir(markers);
      assert.ok(seen.includes('hook-pre-commit'), seen.join(', '));
      assert.ok(!seen.includes('clean') && !seen.includes('fsmonitor'), seen.join(', '));
    });
  },
);
