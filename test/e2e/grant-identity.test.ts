// A grant covers the tool a human granted: the pack it came from and the parameters it took. An
// MCP server may send a new tool list at any time; a grant of its `act` given for the old schema
// ran calls of the new one without asking (review finding, the twenty-first session's notes).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  note,
  resultsOf,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  editInPlace,
  readLogs,
  flipTools,
  startChangingMcp,
  stopDaemon,
  tickBox,
  waitInFolder,
  waitPending,
} from './helpers.ts';
import { GrantStore } from '../../src/approval/grants.ts';

/** The server's `act`; `extra` adds a parameter, as a new version of the server would. */
function act(extra: boolean): object {
  return {
    name: 'act',
    inputSchema: {
      type: 'object',
      properties: {
        target: { type: 'string' },
        ...(extra ? { recursive: { type: 'boolean', default: true } } : {}),
      },
      required: ['target'],
    },
  };
}

describe('e2e: a grant covers the tool as it was granted', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;

  before(async () => {
    // Calling flip makes the server list act again, with one more parameter.
    ({ vault, daemon } = await startChangingMcp([act(false)], [act(true)]));
  });

  after(async () => {
    await stopDaemon(daemon);
    await vault.cleanup();
  });

  const ran = async (id: string): Promise<boolean> =>
    (await readLogs(vault)).some((l) => l.call_id === id && l.status === 'success');
  const pendingPath = (name: string): string => join(vault.root, 'Pending_Approval', name);

  it('runs under the grant while the tool is unchanged, and asks again once its schema changed', async () => {
    await vault.drop('g-1.md', note('G 1', callBlock('h_act', { target: 'a' }, 'g-1')));
    await waitPending(vault, 'g-1.md');
    await editInPlace(pendingPath('g-1.md'), (t) => tickBox(t, 'g-1', 'always allow'));
    await waitInFolder(vault, 'g-1.md', 'Done');
    const [grant] = GrantStore.open(join(vault.root, '.vaultd')).list();

    // Under the grant: runs without asking.
    await vault.drop('g-2.md', note('G 2', callBlock('h_act', { target: 'b' }, 'g-2')));
    const second = await waitInFolder(vault, 'g-2.md', 'Done');
    assert.equal(resultsOf(second)[0]?.metadata['approved_by'], 'policy');

    // The server lists act again, now with a parameter the human never saw.
    await flipTools(vault, daemon, 'h_act');

    await vault.drop('g-3.md', note('G 3', callBlock('h_act', { target: 'c' }, 'g-3')));
    // Before the fix the old grant ran it: wait for whichever comes first.
    const where = await waitFor(async () =>
      (await ran('g-3')) ? 'ran' : existsSync(pendingPath('g-3.md')) ? 'asked' : undefined,
    );
    assert.equal(where, 'asked', 'the call asked again instead of running under the old grant');
    const asked = await waitPending(vault, 'g-3.md');
    assert.match(asked, /always-allow grant "h_act" was given with other parameters/);
    assert.equal(await ran('g-3'), false, 'the call did not run under the old grant');
    assert.equal(grant?.rule, 'h_act');
    assert.equal(grant?.pack, 'mcp', 'the grant records the pack');
    assert.match(grant?.schema ?? '', /^[0-9a-f]{32}$/, 'and the schema it was given for');

    // Always allow again renews the grant for the tool as it is now.
    await editInPlace(pendingPath('g-3.md'), (t) => tickBox(t, 'g-3', 'always allow'));
    const third = await waitInFolder(vault, 'g-3.md', 'Done');
    assert.equal(resultsOf(third)[0]?.metadata['approved_by'], 'human');
    const renewed = GrantStore.open(join(vault.root, '.vaultd')).list();
    assert.equal(renewed.length, 1, 'the renewed grant replaced the old one');
    assert.notEqual(renewed[0]?.schema, grant?.schema);

    await vault.drop('g-4.md', note('G 4', callBlock('h_act', { target: 'd' }, 'g-4')));
    const fourth = await waitInFolder(vault, 'g-4.md', 'Done');
    assert.equal(resultsOf(fourth)[0]?.metadata['approved_by'], 'policy');
  });
});

describe('e2e: a grant covers the tool as it is when the call runs', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;

  before(async () => {
    // One call at a time, and a command that waits: a note's calls are decided when it is read
    // and run in turn, so the tool list can change in between.
    // The new parameter has no default: the arguments, and their hash, stay the same.
    const optional = {
      name: 'act',
      inputSchema: {
        type: 'object',
        properties: { target: { type: 'string' }, recursive: { type: 'boolean' } },
        required: ['target'],
      },
    };
    ({ vault, daemon } = await startChangingMcp([act(false)], [optional], {
      yaml: 'concurrency: 1\n',
      packs: {
        commands: {
          nap: { description: 'Wait a moment.', argv: ['/bin/sleep', '2'], safety: 'safe' },
        },
      },
    }));
  });

  after(async () => {
    await stopDaemon(daemon);
    await vault.cleanup();
  });

  it('does not run a call under a grant when the tool changed after its note was read (review finding)', async () => {
    await vault.drop('g-1.md', note('G 1', callBlock('h_act', { target: 'a' }, 'g-1')));
    await waitPending(vault, 'g-1.md');
    await editInPlace(join(vault.root, 'Pending_Approval', 'g-1.md'), (t) =>
      tickBox(t, 'g-1', 'always allow'),
    );
    await waitInFolder(vault, 'g-1.md', 'Done');
    // One note: the flip changes act's schema, the nap lets the new list arrive, then act.
    await vault.drop(
      'r.md',
      note(
        'R',
        callBlock('h_flip', {}, 'r-1'),
        callBlock('nap', {}, 'r-2'),
        callBlock('h_act', { target: 'x' }, 'r-3'),
      ),
    );
    const text = await waitFor(
      async () => {
        const folder = await vault.whereIs('r.md');
        if (folder === undefined || folder === 'In_Progress' || folder === 'Needs_Action')
          return undefined;
        return vault.read(folder, 'r.md');
      },
      { timeoutMs: 60_000 },
    );
    const act3 = resultsOf(text).find((r) => r.id === 'r-3');
    assert.equal(act3?.status, 'rejected', 'h_act did not run under the grant for its old schema');
    assert.match(String(act3?.content), /h_act changed after this call was allowed/);
    assert.equal(await ran('r-3'), false);
  });

  const ran = async (id: string): Promise<boolean> =>
    (await readLogs(vault)).some((l) => l.call_id === id && l.status === 'success');
});
