// The overrides for settings a repository's config names itself: each program it could run is
// emptied, each protocol beyond file/ssh/http(s) refused, whatever the case of section and key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { repoOverrides } from '../../../src/tools/git/run.ts';
import { checkBranchName, checkRevision, parseRange } from '../../../src/tools/git/refs.ts';

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
