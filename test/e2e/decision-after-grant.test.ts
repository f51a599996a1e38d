// A human's decision on a call stands, whatever grant comes after the question: a call rejected
// (ticked, or through the API or CLI) ran under an always-allow grant given on another note after
// it was asked, and an approval with edited parameters ran the agent's (review finding).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  startPluginDaemon,
  note,
  resultsOf,
  runCli,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import {
  editInPlace,
  editParameters,
  stopDaemon,
  tickBox,
  waitInFolder,
  waitPending,
} from './helpers.ts';

describe('e2e: a decision stands over a later grant', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  const recorded = async (): Promise<string[]> => {
    const path = join(vault.root, 'danger.log');
    return existsSync(path) ? (await readFile(path, 'utf8')).split('\n').filter(Boolean) : [];
  };
  const pendingPath = (name: string): string => join(vault.root, 'Pending_Approval', name);

  before(async () => {
    ({ vault, daemon } = await startPluginDaemon());
  });

  after(async () => {
    await stopDaemon(daemon);
    await vault.cleanup();
  });

  it('rejects a rejected call and runs an edited approval as edited, though a grant now covers both', async () => {
    const asked = {
      'grant.md': [callBlock('danger_zone', { target: 'grant-agent' }, 'grant-1')],
      'no.md': [callBlock('danger_zone', { target: 'no-agent' }, 'no-1')],
      'edit.md': [callBlock('danger_zone', { target: 'edit-agent' }, 'edit-1')],
      'later.md': [
        callBlock('danger_zone', { target: 'later-a' }, 'la-1'),
        callBlock('danger_zone', { target: 'later-b' }, 'lb-1'),
      ],
    };
    for (const [name, blocks] of Object.entries(asked)) {
      await vault.drop(name, note(name, ...blocks));
      await waitPending(vault, name);
    }
    // A grant of the whole tool, given on another note after these were asked.
    await editInPlace(pendingPath('grant.md'), (t) => tickBox(t, 'grant-1', 'always allow'));
    await waitInFolder(vault, 'grant.md', 'Done');
    assert.deepEqual(await recorded(), ['grant-agent']);

    await editInPlace(pendingPath('no.md'), (t) => tickBox(t, 'no-1', 'reject'));
    const no = await waitInFolder(vault, 'no.md', 'Rejected');
    assert.equal(resultsOf(no)[0]?.status, 'rejected');

    await editInPlace(pendingPath('edit.md'), (t) =>
      tickBox(
        editParameters(t, 'edit-1', () => ({ target: 'edit-human' })),
        'edit-1',
        'approve',
      ),
    );
    const edit = await waitInFolder(vault, 'edit.md', 'Done');
    assert.equal(resultsOf(edit)[0]?.metadata['approved_by'], 'human-modified');
    assert.deepEqual(await recorded(), ['grant-agent', 'edit-human']);

    // A call asked before the grant and not decided runs under it when its note is looked at
    // again (another of its calls decided); its question is withdrawn.
    await editInPlace(pendingPath('later.md'), (t) => tickBox(t, 'lb-1', 'approve'));
    const later = await waitInFolder(vault, 'later.md', 'Done');
    assert.deepEqual(
      resultsOf(later).map((r) => r.metadata['approved_by']),
      ['policy', 'human'],
    );
    assert.deepEqual(await recorded(), ['grant-agent', 'edit-human', 'later-a', 'later-b']);
    const pending = await runCli(['approvals', '--json', '--config', vault.configPath]);
    assert.deepEqual(JSON.parse(pending.stdout), [], 'no question left pending');
  });
});
