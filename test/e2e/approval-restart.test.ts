// A human's approval survives a stop between the decision being used and its call starting: the
// request is consumed when the call is handed to the executor, and the call's intent is recorded
// only once it has a slot. A restart in between asked the human again, and a crash there rejected
// the call as "already consumed" (crash campaign finding).
import assert from 'node:assert/strict';
import { readFileSync, watch } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  ROOT,
  startCli,
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

/**
 * SIGKILL `running` at the first change in `folder` for which `fires` holds (the moment a state
 * file is written or a note appears there), once `act` has set it off; resolves when vaultd has
 * exited.
 * @param message what the wait for the kill says when it never comes.
 */
async function killOn(
  running: DaemonProcess,
  folder: string,
  fires: (file: string) => boolean,
  message: string,
  act: () => Promise<unknown> = async () => undefined,
): Promise<void> {
  let killed = false;
  const watcher = watch(folder, (_event, file) => {
    if (killed || file === null || !fires(file)) return;
    running.child.kill('SIGKILL');
    killed = true;
  });
  try {
    await act();
    await waitFor(() => killed, { message });
    await running.exited;
  } finally {
    watcher.close();
  }
}

/** {@link killOn} at the first write of the vault's approval requests that holds `text`. */
function killOnRequests(
  running: DaemonProcess,
  root: string,
  text: string,
  message: string,
  act?: () => Promise<unknown>,
): Promise<void> {
  const file = join(root, '.vaultd', 'approval-requests.jsonl');
  return killOn(
    running,
    dirname(file),
    (name) => name === basename(file) && readFileSync(file, 'utf8').includes(text),
    message,
    act,
  );
}

describe('e2e: an approval used just before a stop', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess | undefined;
  let dangerLog: string;
  let sideLog: string;

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

  const requestsFile = (): string => join(vault.root, '.vaultd', 'approval-requests.jsonl');
  /** The id of the request asked about a call. */
  async function requestId(callId: string): Promise<string> {
    const line = (await readFile(requestsFile(), 'utf8'))
      .split('\n')
      .find((l) => l.includes('"t":"request"') && l.includes(`"callId":"${callId}"`));
    assert.ok(line !== undefined, `a request for ${callId}`);
    return (JSON.parse(line) as { id: string }).id;
  }

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
    // This very request consumed: a count of "consumed" in the file was met at once by the
    // first test's request, consumed twice (before and after its restart), and the kill came at
    // a random point of the claim instead.
    const id = await requestId(`${target}-1`);
    await waitFor(
      async () =>
        (await readFile(requestsFile(), 'utf8')).includes(`"id":"${id}","state":"consumed"`),
      { message: 'the approval used' },
    );
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

  // The decided note's requests were bound to its claim after the claim's rename: a kill in
  // between left the claim in In_Progress/ and the approval bound to the note in
  // Pending_Approval/, and the resumed note had the approved call rejected as "not waiting on
  // this call" (found by CI, under load). The kill here comes as the claim appears.
  it('runs it after a crash just as vaultd claims the decided note, once', async () => {
    const target = 'claim';
    const name = `${target}.md`;
    await vault.drop(name, note('Ask', callBlock('danger_zone', { target }, `${target}-1`)));
    await waitPending(vault, name);
    await vault.drop(
      `long-${name}`,
      note('Long', callBlock('side_effect', { label: `long-${target}`, ms: 20_000 })),
    );
    await waitFor(
      async () => (await readFile(sideLog, 'utf8').catch(() => '')).includes(`long-${target}`),
      { message: 'the long call started' },
    );
    await killAtClaim(daemon as DaemonProcess, name, () =>
      editInPlace(join(vault.root, 'Pending_Approval', name), (t) =>
        tickBox(t, `${target}-1`, 'approve'),
      ),
    );
    daemon = await startDaemon(vault);
    const done = await waitInFolder(vault, name, 'Done', 30_000);
    const [result] = resultsOf(done);
    assert.equal(result?.status, 'success', JSON.stringify(result));
    assert.equal(result?.metadata['approved_by'], 'human');
    assert.deepEqual(await readLines(dangerLog), ['term', 'kill', 'claim']);
  });
  // A claim an older vaultd left with its approval still bound to the note in Pending_Approval/
  // (see above): a decision read in In_Progress/ never counts, so the call is refused. Its
  // request stayed open, and the note was claimed from Rejected/, rewritten and moved back at
  // every reconcile scan, for ever, each claim recorded in the requests file.
  it('closes the request of a call the note no longer waits on, and then leaves the note alone', async () => {
    const name = 'legacy.md';
    await vault.drop(name, note('Legacy', callBlock('danger_zone', { target: 'legacy' }, 'lg-1')));
    await waitPending(vault, name);
    const pendingPath = join(vault.root, 'Pending_Approval', name);
    const id = await requestId('lg-1');
    assert.equal(await stopDaemon(daemon as DaemonProcess), 0);
    daemon = undefined;
    await editInPlace(pendingPath, (t) => tickBox(t, 'lg-1', 'approve'));
    // Claimed by a process that is gone (a pid above any pid_max), the bind never recorded.
    await rename(pendingPath, join(vault.root, 'In_Progress', 'legacy.vaultd-zzzzz-1-0000-0.md'));
    const running = await startDaemon(vault);
    daemon = running;
    const [result] = resultsOf(await waitInFolder(vault, name, 'Rejected', 30_000));
    assert.equal(result?.status, 'rejected', JSON.stringify(result));
    await waitFor(
      async () =>
        (await readFile(requestsFile(), 'utf8')).includes(`"id":"${id}","state":"superseded"`),
      { message: 'the request closed' },
    );
    await waitInFolder(vault, name, 'Rejected');
    const rested = await readFile(join(vault.root, 'Rejected', name), 'utf8');
    const processed = (): number =>
      running
        .output()
        .split('\n')
        .filter((l) => l.includes('"note processed"') && l.includes(name)).length;
    const scans = (): number => running.output().split('"msg":"reconcile scan"').length;
    const before = { processed: processed(), scans: scans() };
    await waitFor(() => scans() >= before.scans + 2, {
      message: 'two reconcile scans',
      timeoutMs: 15_000,
    });
    assert.equal(processed(), before.processed);
    assert.equal(await readFile(join(vault.root, 'Rejected', name), 'utf8'), rested);
    assert.ok(!(await readLines(dangerLog)).includes('legacy'));
  });
  /** SIGKILL `running` as soon as a claim of `name` appears in In_Progress/, after `act`. */
  function killAtClaim(
    running: DaemonProcess,
    name: string,
    act?: () => Promise<unknown>,
  ): Promise<void> {
    const stem = name.replace(/\.md$/, '.vaultd-');
    return killOn(
      running,
      join(vault.root, 'In_Progress'),
      (file) => file.startsWith(stem),
      'the claim seen and vaultd killed',
      act,
    );
  }

  // The decision a move stands for was recorded only once the claimed note was worked on: a kill
  // at the claim left a note in In_Progress/ whose folder was forgotten, and the resumed note
  // read only its ticks (crash audit): moved to Approved/, it was asked again.
  it('runs a call approved by moving the note to Approved/ after a crash at its claim, once', async () => {
    const name = 'moved.md';
    await vault.drop(name, note('Moved', callBlock('danger_zone', { target: 'moved' }, 'mv-1')));
    await waitPending(vault, name);
    await killAtClaim(daemon as DaemonProcess, name, () =>
      rename(join(vault.root, 'Pending_Approval', name), join(vault.root, 'Approved', name)),
    );
    daemon = await startDaemon(vault);
    const [result] = resultsOf(await waitInFolder(vault, name, 'Done', 30_000));
    assert.equal(result?.status, 'success', JSON.stringify(result));
    assert.deepEqual(
      (await readLines(dangerLog)).filter((l) => l === 'moved'),
      ['moved'],
    );
  });

  // ... and one with approve ticked, then moved to Rejected/ (which rejects every call, ticked
  // approvals included) ran.
  it('rejects a call ticked approve and then moved to Rejected/ after a crash at its claim', async () => {
    const name = 'changed-mind.md';
    await vault.drop(name, note('Mind', callBlock('danger_zone', { target: 'mind' }, 'cm-1')));
    await waitPending(vault, name);
    assert.equal(await stopDaemon(daemon as DaemonProcess), 0);
    daemon = undefined;
    const pendingPath = join(vault.root, 'Pending_Approval', name);
    await editInPlace(pendingPath, (t) => tickBox(t, 'cm-1', 'approve'));
    await rename(pendingPath, join(vault.root, 'Rejected', name));
    await killAtClaim(startCli(['run', '--config', vault.configPath]), name);
    daemon = await startDaemon(vault);
    const [result] = resultsOf(await waitInFolder(vault, name, 'Rejected', 30_000));
    assert.equal(result?.status, 'rejected', JSON.stringify(result));
    assert.ok(!(await readLines(dangerLog)).includes('mind'));
  });
  // The history of a call cut off earlier was forgotten after the human's approval to run it
  // again was used: a kill in between left both, and the resumed note rejected the call as
  // "already consumed" (crash audit).
  it('runs a call cut off earlier and approved again after a crash as its approval is used, once', async () => {
    const call = callBlock('danger_zone', { target: 'again', ms: 3000 }, 'again-1');
    await vault.drop('again-a.md', note('Again', call));
    await waitPending(vault, 'again-a.md');
    await editInPlace(join(vault.root, 'Pending_Approval', 'again-a.md'), (t) =>
      tickBox(t, 'again-1', 'approve'),
    );
    const ledger = join(vault.root, '.vaultd', 'ledger.jsonl');
    await waitFor(async () => (await readFile(ledger, 'utf8')).includes('"k":"id:again-1:'), {
      message: 'the first run started',
    });
    (daemon as DaemonProcess).child.kill('SIGKILL');
    await (daemon as DaemonProcess).exited;
    daemon = await startDaemon(vault);
    const [cut] = resultsOf(await waitInFolder(vault, 'again-a.md', 'Failed', 30_000));
    assert.equal(cut?.status, 'interrupted', JSON.stringify(cut));

    // The same call in a new note: a human is asked (it may have acted), and approves.
    await vault.drop('again-b.md', note('Again', call));
    await waitPending(vault, 'again-b.md');
    const ids = (await readFile(requestsFile(), 'utf8'))
      .split('\n')
      .filter((l) => l.includes('"t":"request"') && l.includes('"callId":"again-1"'))
      .map((l) => (JSON.parse(l) as { id: string }).id);
    const used = `"id":"${ids.at(-1) ?? ''}","state":"consumed"`;
    await killOnRequests(
      daemon as DaemonProcess,
      vault.root,
      used,
      'the approval used and vaultd killed',
      () =>
        editInPlace(join(vault.root, 'Pending_Approval', 'again-b.md'), (t) =>
          tickBox(t, 'again-1', 'approve'),
        ),
    );
    daemon = await startDaemon(vault);
    const [result] = resultsOf(await waitInFolder(vault, 'again-b.md', 'Done', 30_000));
    assert.equal(result?.status, 'success', JSON.stringify(result));
    assert.deepEqual(
      (await readLines(dangerLog)).filter((l) => l === 'again'),
      ['again'],
      'the approved run (the cut-off one never got as far as its log)',
    );
  });
  // A rejection was used (the request consumed) before its result was written: a kill between
  // the two, and the resumed note asked the human again (crash audit).
  it('rejects a call ticked reject after a crash as the rejection is used, without asking again', async () => {
    const name = 'no.md';
    await vault.drop(name, note('No', callBlock('danger_zone', { target: 'no' }, 'no-1')));
    await waitPending(vault, name);
    const used = `"id":"${await requestId('no-1')}","state":"consumed"`;
    await killOnRequests(
      daemon as DaemonProcess,
      vault.root,
      used,
      'the rejection used and vaultd killed',
      () =>
        editInPlace(join(vault.root, 'Pending_Approval', name), (t) =>
          tickBox(t, 'no-1', 'reject'),
        ),
    );
    daemon = await startDaemon(vault);
    const [result] = resultsOf(await waitInFolder(vault, name, 'Rejected', 30_000));
    assert.equal(result?.status, 'rejected', JSON.stringify(result));
    assert.match(result?.error?.message ?? '', /ticked reject/);
    assert.ok(!(await readLines(dangerLog)).includes('no'));
  });
  // A note that went to wait under a numbered name (another of its name was waiting) had its
  // requests bound to that name only after the move: a kill between left them bound to the claim,
  // which counts only for a note of the claim's own name, and the call could never be approved
  // (crash audit).
  it('lets a human approve a note filed under a numbered name just before a crash', async () => {
    await vault.drop('twin.md', note('Twin', callBlock('danger_zone', { target: 'tw1' }, 'tw-1')));
    await waitPending(vault, 'twin.md');
    await killOn(
      daemon as DaemonProcess,
      join(vault.root, 'Pending_Approval'),
      (file) => file === 'twin-1.md',
      'the numbered note seen and vaultd killed',
      () =>
        vault.drop('twin.md', note('Twin', callBlock('danger_zone', { target: 'tw2' }, 'tw-2'))),
    );
    daemon = await startDaemon(vault);
    await waitPending(vault, 'twin-1.md');
    await editInPlace(join(vault.root, 'Pending_Approval', 'twin-1.md'), (t) =>
      tickBox(t, 'tw-2', 'approve'),
    );
    const [result] = resultsOf(await waitInFolder(vault, 'twin-1.md', 'Done', 30_000));
    assert.equal(result?.status, 'success', JSON.stringify(result));
    assert.deepEqual(
      (await readLines(dangerLog)).filter((l) => l.startsWith('tw')),
      ['tw2'],
    );
  });
  // Killed after asking and before writing the Approval section: the resumed note's section said
  // "the note has no Approval section; move it to the approved or rejected folder", a problem
  // no one made (crash audit).
  it('writes the Approval section without a made-up problem after a crash as vaultd asks', async () => {
    await killOnRequests(
      daemon as DaemonProcess,
      vault.root,
      '"callId":"asked-1"',
      'the request made and vaultd killed',
      () =>
        vault.drop(
          'asked.md',
          note('Asked', callBlock('danger_zone', { target: 'asked' }, 'asked-1')),
        ),
    );
    daemon = await startDaemon(vault);
    const text = await waitPending(vault, 'asked.md');
    assert.doesNotMatch(text, /no Approval section/);
    const asked = (await readFile(requestsFile(), 'utf8'))
      .split('\n')
      .filter((l) => l.includes('"t":"request"') && l.includes('"callId":"asked-1"'));
    assert.equal(asked.length, 1, 'asked once');
  });
  // The requests of a note that goes to wait are bound to its name in Pending_Approval/ before it
  // moves there. A kill between left them pending under a name the note never got: the resumed
  // note asked the human again with a new request, and the old one stayed listed (Dashboard,
  // vaultd approvals) until it expired, two requests for one call. The state such a kill leaves
  // is made here from vaultd's own records: the note put back under its claim, the claim's
  // process gone, the binding line as vaultd wrote it.
  it('keeps the one request of a note killed after its binding and before its move to wait', async () => {
    const name = 'ahead.md';
    await vault.drop(name, note('Ahead', callBlock('danger_zone', { target: 'ahead' }, 'ah-1')));
    await waitPending(vault, name);
    const id = await requestId('ah-1');
    const binding = (await readFile(requestsFile(), 'utf8'))
      .split('\n')
      .filter((l) => l.includes('"t":"note"') && l.includes(`"id":"${id}"`))
      .map((l) => JSON.parse(l) as { note: string; movedFrom?: string })
      .at(-1);
    assert.equal(binding?.note, `Pending_Approval/${name}`);
    assert.match(binding?.movedFrom ?? '', /^In_Progress\/ahead\.vaultd-.+\.md$/);
    assert.equal(await stopDaemon(daemon as DaemonProcess), 0);
    daemon = undefined;
    await rename(
      join(vault.root, 'Pending_Approval', name),
      join(vault.root, binding?.movedFrom ?? ''),
    );
    daemon = await startDaemon(vault);
    const text = await waitPending(vault, name);
    assert.ok(text.includes(id), 'the note names the request it was asked with');
    const asked = (await readFile(requestsFile(), 'utf8'))
      .split('\n')
      .filter((l) => l.includes('"t":"request"') && l.includes('"callId":"ah-1"'));
    assert.equal(asked.length, 1, 'asked once');
    const listed = startCli(['approvals', '--json', '--config', vault.configPath]);
    assert.equal(await listed.exited, 0, listed.output());
    const waiting = (JSON.parse(listed.output()) as { id: string; callId: string }[])
      .filter((r) => r.callId === 'ah-1')
      .map((r) => r.id);
    assert.deepEqual(waiting, [id], 'one call waiting, with the request it was asked with');
    await editInPlace(join(vault.root, 'Pending_Approval', name), (t) =>
      tickBox(t, 'ah-1', 'approve'),
    );
    const [result] = resultsOf(await waitInFolder(vault, name, 'Done', 30_000));
    assert.equal(result?.status, 'success', JSON.stringify(result));
    assert.deepEqual(
      (await readLines(dangerLog)).filter((l) => l === 'ahead'),
      ['ahead'],
    );
  });
});

describe('e2e: a preview gone stale just before a stop', { timeout: 120_000 }, () => {
  // The human approved an edit_file whose file changed after the preview: vaultd voids the
  // request and asks again. A kill between the two, and the resumed note found its request void
  // and the approve tick in its text, and rejected the call (crash audit).
  it('asks again about a call whose approval was voided just before a crash, and runs nothing', async () => {
    const vault = await makeVault(['tools:', '  filesystem:', '    enabled: true', ''].join('\n'));
    let daemon: DaemonProcess | undefined;
    try {
      await mkdir(join(vault.root, 'Notes'), { recursive: true });
      const target = join(vault.root, 'Notes', 'race.md');
      await writeFile(target, 'one\n');
      daemon = await startDaemon(vault);
      const name = 'race.md';
      await vault.drop(
        name,
        note(
          'Race',
          callBlock(
            'edit_file',
            { path: 'Notes/race.md', edits: [{ old_text: 'one', new_text: 'ONE' }] },
            'e1',
          ),
        ),
      );
      await waitPending(vault, name);
      await writeFile(target, 'one\ntwo\n');
      const requests = join(vault.root, '.vaultd', 'approval-requests.jsonl');
      const line = (await readFile(requests, 'utf8'))
        .split('\n')
        .find((l) => l.includes('"t":"request"') && l.includes('"callId":"e1"'));
      const voided = `"id":"${(JSON.parse(line ?? '{}') as { id?: string }).id}","state":"superseded"`;
      await killOnRequests(
        daemon,
        vault.root,
        voided,
        'the approval voided and vaultd killed',
        () =>
          editInPlace(join(vault.root, 'Pending_Approval', name), (t) =>
            tickBox(t, 'e1', 'approve'),
          ),
      );
      daemon = await startDaemon(vault);
      const text = await waitPending(vault, name);
      assert.match(text, /decide on it as it is now/);
      assert.equal(resultsOf(text).length, 0, 'no result: the call waits');
      assert.equal(await readFile(target, 'utf8'), 'one\ntwo\n', 'nothing ran');
    } finally {
      if (daemon !== undefined) await stopDaemon(daemon);
      await vault.cleanup();
    }
  });
});
