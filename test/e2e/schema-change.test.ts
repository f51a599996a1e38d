// A tool whose parameters change while one of its calls waits for a human: an MCP server may send
// a new tool list at any time. The approval was about the call as the tool took it then; with the
// new schema an edited approval ran with a default the human was never shown (review finding).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { callBlock, note, type DaemonProcess, type TempVault } from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  editInPlace,
  editParameters,
  readLogs,
  shownCalls,
  flipTools,
  startChangingMcp,
  stopDaemon,
  tickBox,
  waitInFolder,
  waitPending,
} from './helpers.ts';

/** The server's `act`, whose `force` defaults to `force` in this version of its schema. */
function act(force: boolean): object {
  return {
    name: 'act',
    inputSchema: {
      type: 'object',
      properties: {
        target: { type: 'string' },
        force: { type: 'boolean', default: force },
      },
      required: ['target'],
    },
  };
}

describe('e2e: a tool whose schema changes while a call waits', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;

  before(async () => {
    // Calling flip makes the server list act again, now forcing by default.
    ({ vault, daemon } = await startChangingMcp([act(false)], [act(true)]));
  });

  after(async () => {
    await stopDaemon(daemon);
    await vault.cleanup();
  });

  it('asks again instead of running an approval made before the change', async () => {
    await vault.drop(
      'act.md',
      note('Act', callBlock('h_act', { target: 'prod', force: false }, 'act-1')),
    );
    const asked = await waitPending(vault, 'act.md');
    assert.deepEqual(shownCalls(asked)[0]?.parameters, { target: 'prod', force: false });

    await flipTools(vault, daemon, 'h_act');
    // The human drops `force: false`, the default they were shown, and approves.
    const path = join(vault.root, 'Pending_Approval', 'act.md');
    await editInPlace(path, (t) =>
      tickBox(
        editParameters(t, 'act-1', (p) => ({ target: p['target'] })),
        'act-1',
        'approve',
      ),
    );
    const again = await waitFor(
      async () => {
        const text = await waitPending(vault, 'act.md');
        return /parameters h_act takes changed after vaultd asked/.test(text) ? text : undefined;
      },
      { message: 'act.md asked again' },
    );
    assert.equal(
      (await readLogs(vault)).some((l) => l.call_id === 'act-1'),
      false,
      'the call did not run',
    );
    // Asked again, a decision runs the call as it is shown now.
    assert.equal(shownCalls(again)[0]?.parameters['force'], false);
    await editInPlace(path, (t) => tickBox(t, 'act-1', 'approve'));
    await waitInFolder(vault, 'act.md', 'Done');
    const ran = await waitFor(async () =>
      (await readLogs(vault)).find((l) => l.call_id === 'act-1'),
    );
    assert.deepEqual(ran?.parameters, { target: 'prod', force: false });
  });
});
