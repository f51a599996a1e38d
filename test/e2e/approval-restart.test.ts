// A human's approval survives a stop between the decision being used and its call starting: the
// request is consumed when the call is handed to the executor, and the call's intent is recorded
// only once it has a slot. A restart in between asked the human again, and a crash there rejected
// the call as "already consumed" (crash campaign finding).
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  ROOT,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  editInPlace,
  readLines,
  startDaemon,
  stopDaemon,
  tickBox,
  waitInFolder,
  waitPending,
} from './helpers.ts';

const PLUGIN = join(ROOT, 'test/fixtures/plugins/test-tools.ts');

describe('e2e: an approval used just before a stop', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess | undefined;
  let dangerLog: string;
  let sideLog: string;
  let consumed = 0;

  before(async () => {
    vault = await makeVault();
    dangerLog = join(vault.root, 'danger.log');
    sideLog = join(vault.root, 'side.log');
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        [
          'concurrency: 1',
          'shutdown:',
          '  grace_ms: 300',
          'plugins:',
          `  - ${PLUGIN}`,
          'tools:',
          '  danger_zone:',
          `    log: ${dangerLog}`,
          '  side_effect:',
          `    log: ${sideLog}`,
          '',
        ].join('\n'),
    );
    daemon = await startDaemon(vault);
  });
  after(async () => {
    if (daemon !== undefined) await stopDaemon(daemon);
    await vault.cleanup();
  });

  /** Approve a call while a long call holds the only slot, stop vaultd, start it again. */
  async function approveThenStop(target: string, stop: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const name = `${target}.md`;
    await vault.drop(name, note('Ask', callBlock('danger_zone', { target }, `${target}-1`)));
    await waitPending(vault, name);
    // A long call takes the only slot; the approved call waits behind it, its request consumed.
    await vault.drop(
      `long-${name}`,
      note('Long', callBlock('side_effect', { label: `long-${target}`, ms: 20_000 })),
    );
    await waitFor(
      async () => (await readFile(sideLog, 'utf8').catch(() => '')).includes(`long-${target}`),
      { message: 'the long call started' },
    );
    await editInPlace(join(vault.root, 'Pending_Approval', name), (t) =>
      tickBox(t, `${target}-1`, 'approve'),
    );
    const requests = join(vault.root, '.vaultd', 'approval-requests.jsonl');
    await waitFor(
      async () => (await readFile(requests, 'utf8')).split('"consumed"').length - 1 > consumed,
      { message: 'the approval used' },
    );
    consumed++;
    const running = daemon as DaemonProcess;
    if (stop === 'SIGTERM') {
      assert.equal(await stopDaemon(running), 0);
    } else {
      running.child.kill('SIGKILL');
      await running.exited;
    }
    daemon = await startDaemon(vault);
    const done = await waitInFolder(vault, name, 'Done', 30_000);
    const [result] = resultsOf(done);
    assert.equal(result?.status, 'success', JSON.stringify(result));
    assert.equal(result?.metadata['approved_by'], 'human');
  }

  it('runs the approved call after a restart that came while it waited for a slot', async () => {
    await approveThenStop('term', 'SIGTERM');
    assert.deepEqual(await readLines(dangerLog), ['term']);
  });

  it('runs it after a crash there too, once', async () => {
    await approveThenStop('kill', 'SIGKILL');
    assert.deepEqual(await readLines(dangerLog), ['term', 'kill']);
  });
});
