// The shell pack end to end through a real daemon: a command line waits for a human with a
// preview of the command and its sandbox, runs once approved with its output in the note; a
// prefix allow rule runs a plain command at once and never a compound one.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  editInPlace,
  startDaemon,
  stopDaemon,
  tickBox,
  waitInFolder,
  waitPending,
} from '../../e2e/helpers.ts';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  type DaemonProcess,
  type TempVault,
} from '../../helpers/vault.ts';
import { giveToSandbox, workDir } from './helpers.ts';

describe('shell pack end to end', { timeout: 90_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  before(async () => {
    vault = await makeVault();
    await giveToSandbox(vault.root);
    await workDir(vault.root, 'work');
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        [
          'policy:',
          '  allow:',
          "    - 'shell_exec(command:echo policy*)'",
          'tools:',
          '  shell:',
          '    enabled: true',
          '    max_timeout_s: 30',
          '',
        ].join('\n'),
    );
    daemon = await startDaemon(vault);
  });
  after(async () => {
    assert.equal(await stopDaemon(daemon), 0, daemon.output().slice(-2000));
    await vault.cleanup();
  });

  it('asks a human with a preview of the command and its sandbox, then writes the output into the note', async () => {
    await vault.drop(
      'build.md',
      note(
        'Build',
        callBlock(
          'shell_exec',
          { command: 'echo built > out.txt && cat out.txt', cwd: 'work' },
          'b1',
        ),
      ),
    );
    const pending = await waitPending(vault, 'build.md');
    assert.match(pending, /echo built > out\.txt && cat out\.txt/);
    assert.match(pending, /network: none/);
    assert.match(pending, /limits: timeout 30 s, CPU 60 s/);
    assert.equal(
      existsSync(join(vault.root, 'work', 'out.txt')),
      false,
      'nothing ran before approval',
    );
    await editInPlace(join(vault.root, 'Pending_Approval', 'build.md'), (t) =>
      tickBox(t, 'b1', 'approve'),
    );
    const done = await waitInFolder(vault, 'build.md', 'Done', 30_000);
    const [result] = resultsOf(done);
    assert.equal(result?.status, 'success', result?.content);
    assert.equal(result?.metadata['approved_by'], 'human');
    assert.deepEqual(
      [
        (result?.data as { stdout: string }).stdout,
        (result?.data as { exit_code: number }).exit_code,
      ],
      ['built\n', 0],
    );
    assert.match(done, /built/);
  });

  it('runs a plain command a prefix rule allows at once, and puts a compound one before a human', async () => {
    await vault.drop(
      'plain.md',
      note('Plain', callBlock('shell_exec', { command: 'echo policy ok', cwd: 'work' }, 'p1')),
    );
    const done = await waitInFolder(vault, 'plain.md', 'Done', 30_000);
    assert.equal(resultsOf(done)[0]?.metadata['approved_by'], 'policy');
    await vault.drop(
      'sneaky.md',
      note(
        'Sneaky',
        callBlock('shell_exec', { command: 'echo policy ok; touch pwned', cwd: 'work' }, 's1'),
      ),
    );
    const pending = await waitPending(vault, 'sneaky.md');
    assert.match(pending, /compound command line/);
    // Its command cannot be pinned on one line, and the whole tool is not what a human looked
    // at: no always-allow box.
    assert.doesNotMatch(pending, /^- \[ \] always allow/m);
    assert.equal(existsSync(join(vault.root, 'work', 'pwned')), false);
  });

  it('offers to always allow the command in its folder, not every command, and grants exactly that', async () => {
    // The box granted the whole tool: ticking "always allow" on `npm test` let every later
    // command an agent wrote run without a human.
    const command = 'echo kept *';
    await vault.drop(
      'keep.md',
      note('Keep', callBlock('shell_exec', { command, cwd: 'work' }, 'k1')),
    );
    const pending = await waitPending(vault, 'keep.md');
    assert.match(
      pending,
      /^- \[ \] always allow `shell_exec\(command:"echo kept \\\*", cwd:"work"\)`$/m,
    );
    await editInPlace(join(vault.root, 'Pending_Approval', 'keep.md'), (t) =>
      tickBox(t, 'k1', 'always allow'),
    );
    const kept = await waitInFolder(vault, 'keep.md', 'Done', 30_000);
    assert.equal(resultsOf(kept)[0]?.metadata['approved_by'], 'human');

    // The same command in the same folder runs under the grant.
    await vault.drop(
      'keep-2.md',
      note('Keep 2', callBlock('shell_exec', { command, cwd: 'work' }, 'k2')),
    );
    const again = await waitInFolder(vault, 'keep-2.md', 'Done', 30_000);
    assert.equal(resultsOf(again)[0]?.metadata['approved_by'], 'policy');

    // Another command, one the `*` would match as a pattern, or another folder: asked again.
    for (const [name, args] of [
      ['other.md', { command: 'touch pwned', cwd: 'work' }],
      ['glob.md', { command: 'echo kept anything', cwd: 'work' }],
      ['elsewhere.md', { command, cwd: '.' }],
    ] as const) {
      await vault.drop(name, note(name, callBlock('shell_exec', args, 'o1')));
      await waitPending(vault, name);
    }
    assert.equal(existsSync(join(vault.root, 'work', 'pwned')), false);
  });
});
