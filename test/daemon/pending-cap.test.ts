// Red-team replay: an agent writing only the inbox, notes of thousands of dangerous calls, grew
// the approval requests kept in memory without end (50,000 waiting calls: RSS 81 → 265 MB at
// rest). approval.max_pending caps the calls waiting for a human, over all notes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  note,
  resultsOf,
  runCli,
  startPluginDaemon,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { readLines, waitInFolder, waitPending } from '../e2e/helpers.ts';
import { join } from 'node:path';

describe('approval.max_pending: the calls waiting for a human, over all notes', () => {
  let vault: TempVault;
  let daemon: DaemonProcess;

  before(async () => {
    ({ vault, daemon } = await startPluginDaemon('approval:\n  max_pending: 2\n'));
  });
  after(async () => {
    const code = await daemon.stop();
    assert.equal(code, 0, daemon.output().slice(-3000));
    await vault.cleanup();
  });

  it('answers a call past the cap RATE_LIMITED, runs nothing, and asks again once some were decided', async () => {
    const danger = (target: string, id: string): string => callBlock('danger_zone', { target }, id);
    await vault.drop(
      'many.md',
      note('Many', danger('m1', 'm1'), danger('m2', 'm2'), danger('m3', 'm3')),
    );
    const pending = await waitPending(vault, 'many.md');
    const results = resultsOf(pending);
    assert.deepEqual(
      results.map((r) => [r.id, r.error?.code]),
      [['m3', 'RATE_LIMITED']],
    );
    assert.match(String(results[0]?.content), /2 calls already wait .*approval\.max_pending/);
    // Full: a call of another note is answered at once too, and its note is done with.
    await vault.drop('more.md', note('More', danger('x1', 'x1')));
    const failed = await waitInFolder(vault, 'more.md', 'Failed');
    assert.equal(resultsOf(failed)[0]?.error?.code, 'RATE_LIMITED');
    // A human decides the waiting ones: room again.
    const rejected = await runCli([
      'reject',
      join(vault.root, 'Pending_Approval', 'many.md'),
      '--config',
      vault.configPath,
      '--reason',
      'no',
    ]);
    assert.equal(rejected.code, 0, rejected.stderr);
    await waitInFolder(vault, 'many.md', 'Failed');
    await vault.drop('later.md', note('Later', danger('l1', 'l1')));
    const later = await waitPending(vault, 'later.md');
    assert.deepEqual(resultsOf(later), []);
    assert.deepEqual(await readLines(join(vault.root, 'danger.log')), []);
  });
});
