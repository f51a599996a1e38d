// Pure parts of the git pack, table-driven: config overrides for what a repository names, ref
// checks, and the readers of git's machine output.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hideCredentials, repoOverrides } from '../../../src/tools/git/run.ts';
import { checkBranchName, checkRevision, parseRange } from '../../../src/tools/git/refs.ts';
import { parseLog, parseNumstat, parseStatus } from '../../../src/tools/git/parse.ts';

describe('git config overrides', () => {
  it('empties every program-running key the repository names, and only those', () => {
    assert.deepEqual(
      repoOverrides([
        'filter.Evil Name.clean',
        'filter.lfs.smudge',
        'filter.proc.process',
        'filter.x.required',
        'diff.pdf.textconv',
        'diff.pdf.command',
        'diff.external',
        'merge.ours.driver',
        'credential.https://example.com.helper',
        'credential.helper',
        'protocol.ext.allow',
        'protocol.HTTPS.allow',
        'http.https://example.com.cookiefile',
        'http.savecookies',
        'user.name',
        'remote.origin.url',
      ]),
      [
        ['filter.Evil Name.clean', ''],
        ['filter.Evil Name.required', 'false'],
        ['filter.lfs.smudge', ''],
        ['filter.lfs.required', 'false'],
        ['filter.proc.process', ''],
        ['filter.proc.required', 'false'],
        ['diff.pdf.textconv', ''],
        ['diff.pdf.command', ''],
        ['merge.ours.driver', ''],
        ['credential.https://example.com.helper', ''],
        ['protocol.ext.allow', 'never'],
        ['protocol.HTTPS.allow', 'always'],
        ['http.https://example.com.cookiefile', ''],
        ['http.savecookies', 'false'],
      ],
    );
  });
});

describe('git ref checks', () => {
  it('accepts revisions and refuses options, paths, searches and shell text', () => {
    for (const ok of [
      'main',
      'HEAD',
      'HEAD~2',
      'HEAD^2',
      'main@{1}',
      '@{-1}',
      'v1.2.3',
      'feature/x',
      'a1b2c3d',
      'main@{upstream}',
    ]) {
      assert.equal(checkRevision(ok), ok);
    }
    for (const bad of [
      '-p',
      '--output=/tmp/x',
      'HEAD:file',
      ':/msg',
      'a b',
      'a..b',
      'main;id',
      '$(id)',
      '',
      'x.lock',
      'main\n',
    ]) {
      assert.throws(() => checkRevision(bad), /not a revision/, bad);
    }
  });

  it('reads ranges side by side', () => {
    assert.deepEqual(parseRange('main..feature'), {
      from: 'main',
      to: 'feature',
      symmetric: false,
    });
    assert.deepEqual(parseRange('main...HEAD'), { from: 'main', to: 'HEAD', symmetric: true });
    assert.deepEqual(parseRange('..HEAD'), { from: undefined, to: 'HEAD', symmetric: false });
    assert.deepEqual(parseRange('HEAD'), { single: 'HEAD' });
    assert.throws(() => parseRange('a..b..c'), /not a range/);
    assert.throws(() => parseRange('..'), /not a range/);
    assert.throws(() => parseRange('main..--output=x'), /not a revision/);
  });

  it('accepts branch names git accepts and refuses the rest', () => {
    for (const ok of ['main', 'feature/x-1', 'release_2.0', '_tmp'])
      assert.equal(checkBranchName(ok), ok);
    for (const bad of [
      '-b',
      '--force',
      'a..b',
      'a//b',
      'a/.b',
      'a.lock',
      'a/',
      'a.',
      'HEAD',
      '@',
      'a@{b',
      'a b',
      'a:b',
      '+a',
      'a~1',
      'a^',
    ]) {
      assert.throws(() => checkBranchName(bad), /not a branch name/, bad);
    }
  });
});

describe('git output readers', () => {
  it('reads porcelain v2 status: branch, changes, renames, conflicts, untracked', () => {
    const text = [
      '# branch.oid 1111111111111111111111111111111111111111',
      '# branch.head main',
      '# branch.upstream origin/main',
      '# branch.ab +2 -1',
      '1 .M N... 100644 100644 100644 aaa aaa notes/a file.md',
      '2 R. N... 100644 100644 100644 bbb bbb R100 new name.md',
      'old name.md',
      'u UU N... 100644 100644 100644 100644 c1 c2 c3 conflict.md',
      '? untracked.md',
      '',
    ].join('\0');
    const status = parseStatus(text);
    assert.equal(status.branch, 'main');
    assert.equal(status.upstream, 'origin/main');
    assert.equal(status.ahead, 2);
    assert.equal(status.behind, 1);
    assert.deepEqual(status.files, [
      { path: 'notes/a file.md', status: 'modified', index: '.', worktree: 'M', staged: false },
      {
        path: 'new name.md',
        status: 'renamed',
        index: 'R',
        worktree: '.',
        staged: true,
        orig_path: 'old name.md',
      },
      { path: 'conflict.md', status: 'conflicted', index: 'U', worktree: 'U', staged: false },
      { path: 'untracked.md', status: 'untracked', index: '?', worktree: '?', staged: false },
    ]);
    const detached = parseStatus('# branch.oid (initial)\0# branch.head (detached)\0');
    assert.equal(detached.branch, null);
    assert.equal(detached.commit, null);
  });

  it('reads log -z and numstat -z, renames and binary files included', () => {
    assert.deepEqual(
      parseLog(
        'h1\nAnn\nann@x\n2026-01-01T00:00:00Z\nfirst\0\nh2\nBob\nbob@x\n2026-01-02T00:00:00Z\nsecond: a\0',
      ),
      [
        {
          hash: 'h1',
          author: 'Ann',
          email: 'ann@x',
          date: '2026-01-01T00:00:00Z',
          subject: 'first',
        },
        {
          hash: 'h2',
          author: 'Bob',
          email: 'bob@x',
          date: '2026-01-02T00:00:00Z',
          subject: 'second: a',
        },
      ],
    );
    assert.deepEqual(parseNumstat('1\t2\ta.md\0-\t-\tpic.png\x000\t0\t\0old.md\0new.md\0'), [
      { path: 'a.md', added: 1, deleted: 2 },
      { path: 'pic.png', added: null, deleted: null },
      { path: 'new.md', added: 0, deleted: 0, orig_path: 'old.md' },
    ]);
  });
});

describe('credentials in git output', () => {
  it('removes the user-info of every URL', () => {
    assert.equal(
      hideCredentials(
        "fatal: unable to access 'https://bob:s3cret@example.com/r.git/': 401\nTo http://tok@h/x ok\ngit@github.com:a/b",
      ),
      "fatal: unable to access 'https://example.com/r.git/': 401\nTo http://h/x ok\ngit@github.com:a/b",
    );
  });
});
