import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { callBlock, note, resultsOf, startCli, type DaemonProcess } from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  killIfRunning,
  logLinesOf,
  makeServiceVault,
  readSideEffects,
  signalAndWait,
  waitForLog,
  type ServiceVault,
} from './helpers.ts';

describe('vaultd run: SIGHUP reloads the config', () => {
  let vault: ServiceVault;
  let daemon: DaemonProcess;
  let otherLog: string;

  before(async () => {
    vault = await makeServiceVault({ extra: 'settle_ms: 200' });
    otherLog = join(vault.root, 'other-side-effects.log');
    daemon = startCli(['run', '--config', vault.configPath]);
    await daemon.ready();
  });

  after(async () => {
    await killIfRunning(daemon);
    await vault.cleanup();
  });

  const finished = (name: string): Promise<string> =>
    waitFor(async () => {
      const folder = await vault.whereIs(name);
      return folder === 'Done' || folder === 'Failed' ? folder : undefined;
    });

  const reload = async (): Promise<number> => {
    const mark = logLinesOf(daemon).length;
    daemon.child.kill('SIGHUP');
    return mark;
  };

  it('runs with the first config', async () => {
    await vault.drop('first.md', note('first', callBlock('slow_echo', { text: 'allowed' })));
    await vault.drop('first-side.md', note('first', callBlock('side_effect', { label: 'one' })));
    assert.equal(await finished('first.md'), 'Done');
    assert.equal(await finished('first-side.md'), 'Done');
    assert.equal((await readSideEffects(vault.sideLog)).starts.get('one'), 1);
  });

  it('takes a good config on SIGHUP: a new deny rule and a new tool setting apply to the next note', async () => {
    await vault.writeConfig({
      sideLog: otherLog,
      extra: "settle_ms: 200\npolicy:\n  deny:\n    - 'slow_echo(text:secret*)'",
    });
    const mark = await reload();
    const line = await waitForLog(daemon, 'config reloaded', mark);
    assert.deepEqual(line['needs_restart'], []);

    await vault.drop('denied.md', note('denied', callBlock('slow_echo', { text: 'secret plan' })));
    await vault.drop('fine.md', note('fine', callBlock('slow_echo', { text: 'public' })));
    await vault.drop('second-side.md', note('second', callBlock('side_effect', { label: 'two' })));
    assert.equal(await finished('denied.md'), 'Failed');
    const [denied] = resultsOf(await vault.read('Failed', 'denied.md'));
    assert.equal(denied?.error?.code, 'PERMISSION_DENIED');
    assert.match(denied?.error?.message ?? '', /slow_echo\(text:secret\*\)/);
    assert.equal(await finished('fine.md'), 'Done');
    assert.equal(await finished('second-side.md'), 'Done');
    assert.equal((await readSideEffects(otherLog)).starts.get('two'), 1);
    assert.equal((await readSideEffects(vault.sideLog)).starts.has('two'), false);
  });

  it('names the settings that need a restart', async () => {
    await vault.writeConfig({
      sideLog: otherLog,
      extra:
        "settle_ms: 200\nconcurrency: 3\nretry:\n  attempts: 2\napproval:\n  check_cron: '*/7 * * * *'\npolicy:\n  deny:\n    - 'slow_echo(text:secret*)'",
    });
    const mark = await reload();
    const line = await waitForLog(daemon, 'config reloaded', mark);
    assert.deepEqual(line['needs_restart'], ['concurrency', 'retry', 'approval.check_cron']);
  });

  it('keeps the running value of a setting that needs a restart until then (review finding)', async () => {
    // max_calls_per_note was enforced at once, while the call budget and the note worker kept
    // the old value; new decision folder names went into Approval sections before being watched.
    await vault.writeConfig({
      sideLog: otherLog,
      extra:
        "settle_ms: 200\nmax_calls_per_note: 1\npolicy:\n  deny:\n    - 'slow_echo(text:secret*)'",
    });
    const mark = await reload();
    const line = await waitForLog(daemon, 'config reloaded', mark);
    assert.ok((line['needs_restart'] as string[]).includes('max_calls_per_note'));
    await vault.drop(
      'two-calls.md',
      note('two', callBlock('slow_echo', { text: 'a' }), callBlock('slow_echo', { text: 'b' })),
    );
    assert.equal(await finished('two-calls.md'), 'Done');
  });

  it('keeps the running config when the new one is invalid, says why, and goes on processing', async () => {
    await vault.writeConfig({ sideLog: vault.sideLog, extra: 'concurrency: lots' });
    const mark = await reload();
    const line = await waitForLog(daemon, /invalid; keeping the running one/, mark);
    assert.equal(line.level, 50);
    assert.match(JSON.stringify(line['err']), /concurrency/);

    await vault.drop('still-denied.md', note('d', callBlock('slow_echo', { text: 'secret' })));
    await vault.drop('third-side.md', note('third', callBlock('side_effect', { label: 'three' })));
    assert.equal(await finished('still-denied.md'), 'Failed', 'the old deny rule still holds');
    assert.equal(await finished('third-side.md'), 'Done');
    assert.equal((await readSideEffects(otherLog)).starts.get('three'), 1, 'old tool setting');
    assert.ok(
      !logLinesOf(daemon)
        .slice(mark)
        .some((l) => l.msg === 'config reloaded'),
    );
  });

  it('keeps the running config when the new file is not YAML', async () => {
    await vault.writeConfig({ extra: 'policy: [unclosed' });
    const mark = await reload();
    await waitForLog(daemon, /invalid; keeping the running one/, mark);
    await vault.drop('last.md', note('last', callBlock('slow_echo', { text: 'secret again' })));
    assert.equal(await finished('last.md'), 'Failed');
    assert.equal(await signalAndWait(daemon, 'SIGTERM'), 0);
  });
});
