// The git pack through a real daemon, from notes: a read-only call runs at once, a commit waits
// for a human with its preview in the note, and once approved from the command line it is made,
// once, with the configured identity.
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  runCli,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { git } from '../tools/git/harness.ts';
import { startDaemon, stopDaemon, waitInFolder, waitPending } from './helpers.ts';

describe('e2e: the git pack from notes', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let repo: string;

  before(async () => {
    vault = await makeVault();
    repo = join(vault.root, 'code');
    await mkdir(repo);
    git(repo, 'init', '-q', '-b', 'main');
    await writeFile(join(repo, 'a.txt'), 'one\n');
    git(repo, 'add', 'a.txt');
    git(repo, 'commit', '-q', '-m', 'first');
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) + 'tools:\n  git:\n    enabled: true\n',
    );
    daemon = await startDaemon(vault);
  });
  after(async () => {
    await stopDaemon(daemon);
    await vault.cleanup();
  });

  it('runs git_status at once and commits only after a human approved, with the preview shown', async () => {
    await writeFile(join(repo, 'a.txt'), 'two\n');
    git(repo, 'add', 'a.txt');
    await vault.drop(
      'commit.md',
      note(
        'Commit',
        callBlock('git_status', { repo: 'code' }, 'status-1'),
        callBlock('git_commit', { repo: 'code', message: 'Second: from a note' }, 'commit-1'),
      ),
    );
    const pending = await waitPending(vault, 'commit.md');
    assert.match(pending, /a\.txt/, 'the preview names the staged file');
    assert.match(pending, /Second: from a note/);
    assert.equal(git(repo, 'rev-list', '--count', 'HEAD').trim(), '1', 'nothing committed yet');
    const status = resultsOf(pending).find((r) => r.id === 'status-1');
    assert.equal(status?.status, 'success');

    const approved = await runCli([
      'approve',
      join(vault.root, 'Pending_Approval', 'commit.md'),
      '--call',
      'commit-1',
    ]);
    assert.equal(approved.code, 0, approved.stdout + approved.stderr);
    const done = await waitInFolder(vault, 'commit.md', 'Done', 30_000);
    const commit = resultsOf(done).find((r) => r.id === 'commit-1');
    assert.equal(commit?.status, 'success', JSON.stringify(commit));
    assert.equal(git(repo, 'rev-list', '--count', 'HEAD').trim(), '2');
    assert.equal(git(repo, 'log', '-1', '--format=%s|%an').trim(), 'Second: from a note|vaultd');
  });
});
