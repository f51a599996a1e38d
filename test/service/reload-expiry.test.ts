import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { callBlock, note, resultsOf, startCli, type DaemonProcess } from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { waitInFolder, waitPending } from '../e2e/helpers.ts';
import {
  killIfRunning,
  logLinesOf,
  makeServiceVault,
  signalAndWait,
  waitForLog,
  type ServiceVault,
} from './helpers.ts';

const DAY_MS = 86_400_000;

describe('vaultd run: approval.expire_after after SIGHUP', { timeout: 60_000 }, () => {
  let vault: ServiceVault;
  let daemon: DaemonProcess;

  const configWith = (expireAfter: string): string =>
    `approval:\n  expire_after: ${expireAfter}\n  check_cron: '* * * * * *'`;

  const reloadWith = async (expireAfter: string): Promise<void> => {
    await vault.writeConfig({ extra: configWith(expireAfter) });
    const mark = logLinesOf(daemon).length;
    daemon.child.kill('SIGHUP');
    await waitForLog(daemon, 'config reloaded', mark);
  };

  /** The expiry the note shows for a call, and its request's times in the store. */
  const expiryOf = async (
    name: string,
    callId: string,
  ): Promise<{ shown: string; requestedAt: string; expiresAt: string }> => {
    const text = await waitPending(vault, name);
    const shown = /rejected as expired after (\S+?) ·/.exec(text)?.[1];
    assert.ok(shown !== undefined, `no expiry shown in:\n${text}`);
    const lines = (await readFile(join(vault.root, '.vaultd', 'approval-requests.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const request = lines.find((l) => l['t'] === 'request' && l['callId'] === callId);
    assert.ok(request !== undefined, `no request for ${callId}`);
    return {
      shown,
      requestedAt: request['requestedAt'] as string,
      expiresAt: request['expiresAt'] as string,
    };
  };

  before(async () => {
    vault = await makeServiceVault({ extra: configWith('10s') });
    daemon = startCli(['run', '--config', vault.configPath]);
    await daemon.ready();
  });

  after(async () => {
    await killIfRunning(daemon);
    await vault.cleanup();
  });

  it('asks a new call with the reloaded expiry, and the note shows the one the store holds', async () => {
    await reloadWith('7d');
    await vault.drop('long.md', note('long', callBlock('danger_zone', { target: 'a' }, 'long-1')));
    const { shown, requestedAt, expiresAt } = await expiryOf('long.md', 'long-1');
    assert.equal(shown, expiresAt);
    assert.equal(Date.parse(expiresAt) - Date.parse(requestedAt), 7 * DAY_MS);
  });

  it('the other way round: a shorter expiry after a reload is shown and applied, and an earlier request keeps its own', async () => {
    await reloadWith('2s');
    await vault.drop('short.md', note('short', callBlock('danger_zone', { target: 'b' }, 'sh-1')));
    const { shown, requestedAt, expiresAt } = await expiryOf('short.md', 'sh-1');
    assert.equal(shown, expiresAt);
    assert.equal(Date.parse(expiresAt) - Date.parse(requestedAt), 2_000);
    const end = await waitFor(
      async () => {
        const text = await waitInFolder(vault, 'short.md', 'Rejected');
        return resultsOf(text).length > 0 ? text : undefined;
      },
      { message: 'short.md rejected as expired' },
    );
    assert.match(resultsOf(end)[0]?.error?.message ?? '', /approval expired/);

    // The call asked under 7d keeps its stored expiry, and its note still shows that one.
    const long = await expiryOf('long.md', 'long-1');
    assert.equal(long.shown, long.expiresAt);
    assert.equal(Date.parse(long.expiresAt) - Date.parse(long.requestedAt), 7 * DAY_MS);
    assert.equal(await vault.whereIs('long.md'), 'Pending_Approval');
    assert.equal(await signalAndWait(daemon, 'SIGTERM'), 0);
  });
});
