// The filesystem pack end to end: a daemon child process on a temp vault with the pack enabled;
// calls written into notes, dangerous ones waiting in Pending_Approval/ with a diff preview,
// decided from the command line or in the note, a stale preview asked again.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, writeFile, mkdir, symlink } from 'node:fs/promises';
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
} from '../../helpers/vault.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import {
  editInPlace,
  editParameters,
  startDaemon,
  stopDaemon,
  tickBox,
  waitInFolder,
  waitPending,
} from '../../e2e/helpers.ts';

describe('filesystem pack end to end', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  const cli = (...args: string[]) => runCli([...args, '--config', vault.configPath]);
  const file = (rel: string): Promise<string> => readFile(join(vault.root, rel), 'utf8');

  before(async () => {
    vault = await makeVault(
      ['tools:', '  filesystem:', '    enabled: true', '    scratch: [Scratch]', ''].join('\n'),
    );
    await mkdir(join(vault.root, 'Notes'));
    await mkdir(join(vault.root, 'Scratch'));
    await writeFile(join(vault.root, 'Notes', 'plan.md'), '# Plan\n\n- ship\n- test\n');
    daemon = await startDaemon(vault);
  });
  after(async () => {
    assert.equal(await stopDaemon(daemon), 0, daemon.output().slice(-2000));
    await vault.cleanup();
  });

  it('runs the safe tools at once, with readable content and structured data', async () => {
    await vault.drop(
      'read.md',
      note(
        'Read',
        callBlock('read_file', { path: 'Notes/plan.md', start_line: 3 }, 'r'),
        callBlock('list_directory', { path: 'Notes' }, 'l'),
        callBlock('search_files', { pattern: '*.md', path: 'Notes', content: 'ship' }, 's'),
        callBlock('file_info', { path: 'Notes/plan.md' }, 'i'),
      ),
    );
    const results = resultsOf(await waitInFolder(vault, 'read.md', 'Done'));
    const byId = new Map(results.map((r) => [r.id, r]));
    assert.equal(byId.get('r')?.content, '- ship\n- test\n');
    assert.equal((byId.get('r')?.data as { total_lines: number }).total_lines, 4);
    assert.deepEqual(
      (byId.get('l')?.data as { entries: { path: string }[] }).entries.map((e) => e.path),
      ['plan.md'],
    );
    assert.deepEqual(
      (byId.get('s')?.data as { matches: { path: string; line: number }[] }).matches,
      [{ path: 'Notes/plan.md', line: 3, text: '- ship' }],
    );
    assert.equal((byId.get('i')?.data as { size: number }).size, 22);
  });

  it('writes into a scratch folder at once (cautious), and refuses a write to Approved/', async () => {
    await vault.drop(
      'scratch.md',
      note('Scratch', callBlock('write_file', { path: 'Scratch/tmp.md', content: 'draft\n' }, 'w')),
    );
    const [result] = resultsOf(await waitInFolder(vault, 'scratch.md', 'Done'));
    assert.equal(result?.metadata['safety_level'], 'cautious');
    assert.equal(await file('Scratch/tmp.md'), 'draft\n');
  });

  it("refuses a scratch write into a repository's .git and a write into the inbox, even when approved", async () => {
    // A hook written here would run when a person next commits in the repository; a note written
    // into the inbox would be run by vaultd as calls no agent wrote there itself.
    await mkdir(join(vault.root, 'Scratch', 'proj', '.git', 'hooks'), { recursive: true });
    const hookPath = 'Scratch/proj/.git/hooks/pre-commit';
    await vault.drop(
      'refused.md',
      note(
        'Refused',
        callBlock('write_file', { path: hookPath, content: '#!/bin/sh\ntouch /tmp/x\n' }, 'h'),
        callBlock(
          'write_file',
          { path: 'Needs_Action/injected.md', content: callBlock('list_directory', {}, 'inj') },
          'n',
        ),
      ),
    );
    // The scratch write no longer runs at once: its path is refused, so a human is told it will fail.
    const pending = await waitPending(vault, 'refused.md');
    assert.match(
      pending,
      /This call will fail: Scratch\/proj\/\.git\/hooks\/pre-commit is in Scratch\/proj\/\.git, a git repository's own folder/,
    );
    assert.match(pending, /This call will fail: Needs_Action\/injected\.md is in Needs_Action/);
    const list = await cli('approvals', '--json');
    for (const r of JSON.parse(list.stdout) as { id: string; callId: string }[]) {
      if (r.callId === 'h' || r.callId === 'n') assert.equal((await cli('approve', r.id)).code, 0);
    }
    const results = resultsOf(await waitInFolder(vault, 'refused.md', 'Failed'));
    assert.deepEqual(
      results.map((r) => [r.id, r.error?.code]),
      [
        ['h', 'PERMISSION_DENIED'],
        ['n', 'PERMISSION_DENIED'],
      ],
    );
    assert.equal(existsSync(join(vault.root, hookPath)), false);
    assert.equal(await vault.whereIs('injected.md'), undefined);
  });

  it('reads what is on disk now, never an older result from the cache', async () => {
    await vault.drop(
      'read-1.md',
      note('Read 1', callBlock('read_file', { path: 'Scratch/tmp.md' }, 'r')),
    );
    assert.equal(resultsOf(await waitInFolder(vault, 'read-1.md', 'Done'))[0]?.content, 'draft\n');
    await writeFile(join(vault.root, 'Scratch', 'tmp.md'), 'edited by a human\n');
    await vault.drop(
      'read-2.md',
      note('Read 2', callBlock('read_file', { path: 'Scratch/tmp.md' }, 'r')),
    );
    const [again] = resultsOf(await waitInFolder(vault, 'read-2.md', 'Done'));
    assert.equal(again?.content, 'edited by a human\n');
    assert.equal(again?.metadata['cached'], false);
  });

  it('waits for approval with a diff preview, then writes when approved from the command line', async () => {
    await vault.drop(
      'write.md',
      note(
        'Write',
        callBlock(
          'write_file',
          { path: 'Notes/plan.md', content: '# Plan\n\n- ship it\n- test\n' },
          'w1',
        ),
      ),
    );
    const pending = await waitPending(vault, 'write.md');
    assert.match(pending, /> ```diff\n(?:> .*\n)*> -- ship\n> \+- ship it\n/);
    assert.equal(await file('Notes/plan.md'), '# Plan\n\n- ship\n- test\n');
    const list = await cli('approvals', '--json');
    const request = (JSON.parse(list.stdout) as { id: string; callId: string }[]).find(
      (r) => r.callId === 'w1',
    );
    assert.ok(request, list.stdout);
    const approved = await cli('approve', request.id);
    assert.equal(approved.code, 0, approved.stderr);
    const [result] = resultsOf(await waitInFolder(vault, 'write.md', 'Done'));
    assert.equal(result?.status, 'success');
    assert.equal(result?.metadata['approved_by'], 'human');
    assert.equal(await file('Notes/plan.md'), '# Plan\n\n- ship it\n- test\n');
  });

  it('asks again when the file changed after the preview, and never writes over the change', async () => {
    await writeFile(join(vault.root, 'Notes', 'race.md'), 'one\n');
    await vault.drop(
      'race.md',
      note(
        'Race',
        callBlock(
          'edit_file',
          { path: 'Notes/race.md', edits: [{ old_text: 'one', new_text: 'ONE' }] },
          'e1',
        ),
      ),
    );
    await waitPending(vault, 'race.md');
    // Someone changes the file while the call waits; the human approves the old diff.
    await writeFile(join(vault.root, 'Notes', 'race.md'), 'one\ntwo\n');
    const path = join(vault.root, 'Pending_Approval', 'race.md');
    await editInPlace(path, (t) => tickBox(t, 'e1', 'approve'));
    const again = await waitFor(async () => {
      const text = await vault.read('Pending_Approval', 'race.md').catch(() => '');
      return /changed after the preview was made/.test(text) && text.includes('> +ONE')
        ? text
        : undefined;
    });
    assert.match(again, /> \+ONE\n> {2}two|> \+ONE\n> two/);
    assert.equal(await file('Notes/race.md'), 'one\ntwo\n');
    await editInPlace(path, (t) => tickBox(t, 'e1', 'approve'));
    const [result] = resultsOf(await waitInFolder(vault, 'race.md', 'Done'));
    assert.equal(result?.status, 'success');
    assert.equal(await file('Notes/race.md'), 'ONE\ntwo\n');
  });

  it('creates a folder at once, and copies, moves and deletes once a human ticks each call', async () => {
    await vault.drop(
      'dir.md',
      note('Dir', callBlock('create_directory', { path: 'Archive/2026' }, 'd')),
    );
    const [made] = resultsOf(await waitInFolder(vault, 'dir.md', 'Done'));
    assert.equal(made?.metadata['safety_level'], 'cautious');
    await writeFile(join(vault.root, 'Notes', 'old.md'), 'old\n');
    await writeFile(join(vault.root, 'Notes', 'gone.md'), 'bye\n');
    await vault.drop(
      'tidy.md',
      note(
        'Tidy',
        callBlock(
          'copy_file',
          { source: 'Notes/plan.md', destination: 'Archive/2026/plan.md' },
          'c',
        ),
        callBlock('move_file', { source: 'Notes/old.md', destination: 'Archive/2026/old.md' }, 'm'),
        callBlock('delete_file', { path: 'Notes/gone.md' }, 'x'),
      ),
    );
    const pending = await waitPending(vault, 'tidy.md');
    assert.match(pending, /> -bye/); // the delete's diff
    assert.match(pending, /Move the file Notes\/old\.md to Archive\/2026\/old\.md/);
    await editInPlace(join(vault.root, 'Pending_Approval', 'tidy.md'), (t) =>
      tickBox(tickBox(tickBox(t, 'c', 'approve'), 'm', 'approve'), 'x', 'approve'),
    );
    const results = resultsOf(await waitInFolder(vault, 'tidy.md', 'Done'));
    assert.deepEqual(results.map((r) => [r.id, r.status]).sort(), [
      ['c', 'success'],
      ['m', 'success'],
      ['x', 'success'],
    ]);
    assert.equal(await file('Archive/2026/plan.md'), await file('Notes/plan.md'));
    assert.equal(await file('Archive/2026/old.md'), 'old\n');
    await assert.rejects(file('Notes/old.md'), { code: 'ENOENT' });
    await assert.rejects(file('Notes/gone.md'), { code: 'ENOENT' });
  });

  it('writes the parameters as the human edited them, then approved', async () => {
    await vault.drop(
      'edited.md',
      note(
        'Edited',
        callBlock('write_file', { path: 'Notes/new.md', content: 'agent text\n' }, 'n1'),
      ),
    );
    await waitPending(vault, 'edited.md');
    await editInPlace(join(vault.root, 'Pending_Approval', 'edited.md'), (t) =>
      tickBox(
        editParameters(t, 'n1', (p) => ({ ...p, content: 'human text\n' })),
        'n1',
        'approve',
      ),
    );
    const [result] = resultsOf(await waitInFolder(vault, 'edited.md', 'Done'));
    assert.equal(result?.metadata['approved_by'], 'human-modified');
    assert.equal(await file('Notes/new.md'), 'human text\n');
  });

  // Last: the grant stays for the rest of this daemon's life.
  it('keeps a write_file(path:Notes/*) grant inside Notes/: .. and links lead to a human, shown on their real path', async () => {
    await mkdir(join(vault.root, 'Projects'));
    await writeFile(join(vault.root, 'Projects', 'plan.md'), "the human's plan\n");
    await vault.drop(
      'first.md',
      note('First', callBlock('write_file', { path: 'Notes/todo.md', content: 'todo\n' }, 'w1')),
    );
    await waitPending(vault, 'first.md');
    const approved = await cli(
      'approve',
      join(vault.root, 'Pending_Approval', 'first.md'),
      '--scope',
      'write_file(path:Notes/*)',
    );
    assert.equal(approved.code, 0, approved.stderr);
    await waitInFolder(vault, 'first.md', 'Done');

    await symlink('../Projects', join(vault.root, 'Notes', 'lnk'));
    await vault.drop(
      'second.md',
      note(
        'Second',
        callBlock('write_file', { path: './Notes/granted.md', content: 'ok\n' }, 'w2'),
        callBlock(
          'write_file',
          { path: 'Notes/../Projects/plan.md', content: 'OVERWRITTEN\n' },
          'w3',
        ),
        callBlock('write_file', { path: 'Notes/lnk/other.md', content: 'CREATED\n' }, 'w4'),
      ),
    );
    const pending = await waitPending(vault, 'second.md');
    assert.equal(await file('Notes/granted.md'), 'ok\n');
    assert.equal(await file('Projects/plan.md'), "the human's plan\n");
    await assert.rejects(file('Projects/other.md'), { code: 'ENOENT' });
    // The human sees, and would approve, the paths that would be written.
    assert.match(pending, /"path": "Projects\/plan\.md"/);
    assert.match(pending, /"path": "Projects\/other\.md"/);
    assert.match(pending, /\+\+\+ b\/Projects\/other\.md/);
    assert.doesNotMatch(pending, /### write_file · `w2`/);
  });
});
