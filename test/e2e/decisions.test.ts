// Decisions through channels agents cannot reach (the CLI), switched-off vault decisions, scoped
// grants, and the agent's loop: replays, fixed calls, interrupted calls. A daemon child process on
// a temp vault with the test tools.
import assert from 'node:assert/strict';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  ROOT,
  runCli,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  editInPlace,
  readLines,
  shownCalls,
  startDaemon,
  stopDaemon,
  waitInFolder,
  waitPending,
} from './helpers.ts';

const PLUGIN = join(ROOT, 'test/fixtures/plugins/test-tools.ts');

async function vaultWith(
  extra: string[],
): Promise<{ vault: TempVault; dangerLog: string; sideLog: string }> {
  const vault = await makeVault();
  const dangerLog = join(vault.root, 'danger.log');
  const sideLog = join(vault.root, 'side.log');
  await writeFile(
    vault.configPath,
    (await readFile(vault.configPath, 'utf8')) +
      [
        'plugins:',
        `  - ${PLUGIN}`,
        'tools:',
        '  danger_zone:',
        `    log: ${dangerLog}`,
        '  side_effect:',
        `    log: ${sideLog}`,
        ...extra,
        '',
      ].join('\n'),
  );
  return { vault, dangerLog, sideLog };
}

describe(
  'e2e: decisions from the command line, and vault decisions turned off',
  { timeout: 120_000 },
  () => {
    let vault: TempVault;
    let daemon: DaemonProcess;
    let dangerLog: string;
    const cli = (...args: string[]) => runCli([...args, '--config', vault.configPath]);

    before(async () => {
      ({ vault, dangerLog } = await vaultWith(['approval:', '  vault_decisions: false']));
      daemon = await startDaemon(vault);
    });
    after(async () => {
      const code = await stopDaemon(daemon);
      assert.equal(code, 0, daemon.output().slice(-2000));
      await vault.cleanup();
    });

    it('ignores a ticked box and a move when vault decisions are off, and says how to decide', async () => {
      await vault.drop('off.md', note('Off', callBlock('danger_zone', { target: 'off' }, 'off-1')));
      const pending = await waitPending(vault, 'off.md');
      // The section offers no boxes, only the commands that decide; none of its advice is to tick.
      assert.doesNotMatch(pending, /- \[ \]|tick \*\*|move this note to/);
      assert.match(pending, /- approve: `vaultd approve apr_\w+`/);
      assert.doesNotMatch(pending, /turned off on this vault/, 'no problem before anyone tried');
      // A box typed in by hand and ticked decides nothing either.
      await editInPlace(join(vault.root, 'Pending_Approval', 'off.md'), (t) =>
        t.replace(/- approve: /, '- [x] approve\n- approve: '),
      );
      const again = await waitFor(async () => {
        const text = await vault.read('Pending_Approval', 'off.md');
        return text.includes('turned off on this vault') ? text : undefined;
      });
      assert.match(again, /decide with `vaultd approve` or the HTTP API/);
      assert.equal(shownCalls(pending).length, 1);
      assert.deepEqual(await readLines(dangerLog), []);
    });

    it('lists what waits, approves by request id once, and names the channel and the user', async () => {
      const list = await cli('approvals', '--json');
      assert.equal(list.code, 0, list.stderr);
      const waiting = JSON.parse(list.stdout) as { id: string; callId: string; tool: string }[];
      const request = waiting.find((r) => r.callId === 'off-1');
      assert.ok(request, list.stdout);
      const approved = await cli('approve', request.id);
      assert.equal(approved.code, 0, approved.stderr);
      assert.match(approved.stdout, /approved: apr_\w+ \(danger_zone · off-1/);
      const done = await waitInFolder(vault, 'off.md', 'Done');
      const [result] = resultsOf(done);
      assert.equal(result?.status, 'success');
      assert.equal(result?.metadata['approved_by'], 'human');
      const decided = result?.metadata['decided_by'] as Record<string, unknown>;
      assert.equal(decided['channel'], 'cli');
      assert.equal(decided['request'], request.id);
      assert.equal(typeof decided['by'], 'string');
      assert.deepEqual(await readLines(dangerLog), ['off']);
      const replay = await cli('approve', request.id);
      assert.equal(replay.code, 1);
      assert.match(replay.stderr, /no pending approval/);
    });

    it('approves from a note path without --config, with a scoped always-allow grant', async () => {
      await vault.drop(
        'scoped.md',
        note('Scoped', callBlock('danger_zone', { target: 'safe-1' }, 's-1')),
      );
      await waitPending(vault, 'scoped.md');
      const path = join(vault.root, 'Pending_Approval', 'scoped.md');
      const approved = await runCli(['approve', path, '--scope', 'danger_zone(target:safe-*)']);
      assert.equal(approved.code, 0, approved.stderr);
      await waitInFolder(vault, 'scoped.md', 'Done');
      const grants = await cli('grants', 'list');
      assert.match(
        grants.stdout,
        /^danger_zone\(target:safe-\*\)\s+granted .* by \S+ \(cli\) on Pending_Approval\/scoped\.md \(\S+ pack\)$/m,
      );

      await vault.drop(
        'covered.md',
        note('Covered', callBlock('danger_zone', { target: 'safe-2' }, 's-2')),
      );
      const covered = resultsOf(await waitInFolder(vault, 'covered.md', 'Done'))[0];
      assert.equal(covered?.metadata['approved_by'], 'policy');
      assert.equal(
        (covered?.metadata['decided_by'] as Record<string, unknown>)['rule'],
        'grant:danger_zone(target:safe-*)',
      );
      await vault.drop(
        'outside.md',
        note('Outside', callBlock('danger_zone', { target: 'other' }, 's-3')),
      );
      await waitPending(vault, 'outside.md');
      const revoked = await cli('grants', 'revoke', 'danger_zone');
      assert.equal(revoked.code, 0, revoked.stderr);
      const rejected = await cli('reject', 'outside.md', '--reason', 'not that one');
      assert.equal(rejected.code, 0, rejected.stderr);
      const [result] = resultsOf(await waitInFolder(vault, 'outside.md', 'Rejected'));
      assert.match(String(result?.content), /not that one/);
      assert.deepEqual((await readLines(dangerLog)).sort(), ['off', 'safe-1', 'safe-2']);
    });

    it('approve NOTE decides only the requests vaultd recorded for that note, whatever nonces the agent wrote into it', async () => {
      await vault.drop(
        'harmless.md',
        note('Harmless', callBlock('danger_zone', { target: 'owner' }, 'swap-1')),
      );
      await vault.drop(
        'evil.md',
        note('Evil', callBlock('danger_zone', { target: 'ATTACKER' }, 'swap-1')),
      );
      await vault.drop(
        'evil-2.md',
        note('Evil 2', callBlock('danger_zone', { target: 'ATTACKER-2' }, 'swap-2')),
      );
      const harmless = await waitPending(vault, 'harmless.md');
      const evil = await waitPending(vault, 'evil.md');
      const evil2 = await waitPending(vault, 'evil-2.md');
      const nonceOf = (text: string): string => /"nonce": "(apr_[a-z2-7]+)"/.exec(text)?.[1] ?? '';
      const [ownNonce, evilNonce] = [nonceOf(harmless), nonceOf(evil)];
      assert.notEqual(ownNonce, '');
      assert.notEqual(evilNonce, '');
      // The agent, which can write the vault, names the requests of its other notes in the
      // harmless one: evil's nonce in place of its own, and evil-2's whole part of the section.
      const evil2Part = evil2.slice(evil2.indexOf('### danger_zone'));
      await editInPlace(
        join(vault.root, 'Pending_Approval', 'harmless.md'),
        (t) => `${t.replace(ownNonce, evilNonce).trimEnd()}\n\n${evil2Part}`,
      );

      const approved = await runCli([
        'approve',
        join(vault.root, 'Pending_Approval', 'harmless.md'),
      ]);
      assert.equal(approved.code, 0, approved.stderr);
      assert.match(
        approved.stdout,
        new RegExp(
          `approved: ${ownNonce} \\(danger_zone · swap-1 in Pending_Approval/harmless\\.md\\)`,
        ),
      );
      assert.match(approved.stdout, /"target":"owner"/);
      assert.doesNotMatch(approved.stdout, /evil|ATTACKER/);

      // The daemon took the decision in: only the harmless note's own request left the list.
      const waiting = await waitFor(async () => {
        const list = await cli('approvals', '--json');
        const ids = (JSON.parse(list.stdout) as { id: string }[]).map((r) => r.id);
        return ids.includes(ownNonce) ? undefined : ids;
      });
      assert.ok(waiting.includes(evilNonce), 'the request of evil.md still waits');
      assert.ok(waiting.includes(nonceOf(evil2)), 'the request of evil-2.md still waits');
      assert.deepEqual(
        (await readLines(dangerLog)).filter((l) => l.startsWith('ATTACKER')),
        [],
        'no call of another note ran',
      );
    });

    it("a note naming another note's request does not take it over when vaultd looks at it", async () => {
      // Red-team follow-up: vaultd bound every request a note's text named to that note when it
      // picked the note up (here for a box the agent typed in), so `approve` on the harmless note
      // then decided the evil note's call.
      await vault.drop(
        'hijack.md',
        note('Hijack', callBlock('danger_zone', { target: 'owner-b' }, 'bind-1')),
      );
      await vault.drop(
        'evil-b.md',
        note('Evil B', callBlock('danger_zone', { target: 'ATTACKER-B' }, 'bind-1')),
      );
      const hijack = await waitPending(vault, 'hijack.md');
      const evil = await waitPending(vault, 'evil-b.md');
      const nonceOf = (text: string): string => /"nonce": "(apr_[a-z2-7]+)"/.exec(text)?.[1] ?? '';
      const [ownNonce, evilNonce] = [nonceOf(hijack), nonceOf(evil)];
      assert.notEqual(ownNonce, '');
      assert.notEqual(evilNonce, '');
      const path = join(vault.root, 'Pending_Approval', 'hijack.md');
      await editInPlace(path, (t) =>
        t.replaceAll(ownNonce, evilNonce).replace(/- approve: /, '- [x] approve\n- approve: '),
      );
      // vaultd looked at it: without the request bound to it, the typed box is a decision on a
      // call vaultd is not waiting on here, refused (bound, the box would only be answered with
      // "turned off" and the request would then be this note's).
      const where = await waitFor(async () => {
        const now = await vault.whereIs('hijack.md');
        if (now === 'Rejected') return now;
        const text = await readFile(path, 'utf8').catch(() => '');
        return text.includes('are turned off on this vault') ? 'Pending_Approval' : undefined;
      });
      const list = await cli('approvals', '--json');
      const recorded = Object.fromEntries(
        (JSON.parse(list.stdout) as { id: string; note: string }[]).map((r) => [r.id, r.note]),
      );
      assert.equal(recorded[evilNonce], 'Pending_Approval/evil-b.md');
      assert.equal(where, 'Rejected');
      const [result] = resultsOf(await vault.read('Rejected', 'hijack.md'));
      assert.match(String(result?.content), /vaultd is not waiting on this call in this note/);
      assert.deepEqual(
        (await readLines(dangerLog)).filter((l) => l.startsWith('ATTACKER')),
        [],
        'no call of another note ran',
      );
    });
  },
);

describe(
  'e2e: the agent loop (issue 16) and exactly once across notes (issue 13)',
  { timeout: 120_000 },
  () => {
    let vault: TempVault;
    let daemon: DaemonProcess;
    let sideLog: string;

    before(async () => {
      ({ vault, sideLog } = await vaultWith([]));
      daemon = await startDaemon(vault);
    });
    after(async () => {
      const code = await stopDaemon(daemon);
      assert.equal(code, 0, daemon.output().slice(-2000));
      await vault.cleanup();
    });

    const starts = async (label: string): Promise<number> =>
      (await readLines(sideLog)).filter((l) => l === `start ${label}`).length;

    it('runs a failed call again once the agent fixed it and moved the note back, replacing its result', async () => {
      await vault.drop('fix.md', note('Fix', callBlock('side_effect', { lable: 'typo' }, 'fix-1')));
      const failed = await waitInFolder(vault, 'fix.md', 'Failed');
      assert.equal(resultsOf(failed)[0]?.error?.code, 'INVALID_PARAMS');
      const fixed = failed.replace('"lable"', '"label"');
      await rename(join(vault.root, 'Failed', 'fix.md'), join(vault.root, 'fix-tmp'));
      await writeFile(join(vault.root, 'fix-tmp'), fixed);
      await rename(join(vault.root, 'fix-tmp'), join(vault.root, 'Needs_Action', 'fix.md'));
      const done = await waitInFolder(vault, 'fix.md', 'Done');
      const results = resultsOf(done);
      assert.equal(results.length, 1, 'the new result replaced the old one');
      assert.equal(results[0]?.status, 'success');
      assert.equal(await starts('typo'), 1);
    });

    it('counts only the results of the calls a fixed note holds now, in its folder and front-matter', async () => {
      // QA replay: a block of broken JSON without an id, fixed and moved back, got a new id; the
      // old error result stayed in the note and was still counted (tool_errors over tool_calls).
      const broken =
        '```json\n{"tool_call": {"name": "side_effect", "parameters": {"label": "late"}}\n```';
      await vault.drop('stale.md', note('Stale', broken));
      const failed = await waitInFolder(vault, 'stale.md', 'Failed');
      assert.equal(resultsOf(failed)[0]?.error?.code, 'INVALID_JSON');
      const fixed = failed.replace('{"label": "late"}}', '{"label": "late"}}}');
      await writeFile(join(vault.root, 'stale-tmp'), fixed);
      await rm(join(vault.root, 'Failed', 'stale.md'));
      await rename(join(vault.root, 'stale-tmp'), join(vault.root, 'Needs_Action', 'stale.md'));
      const done = await waitInFolder(vault, 'stale.md', 'Done');
      assert.match(done, /^tool_calls: 1$/m);
      assert.match(done, /^tool_errors: 0$/m);
      assert.equal(await starts('late'), 1);
    });

    it('keeps the id of a call that could not be read, and runs it once the agent fixed it', async () => {
      const broken =
        '```json\n{"tool_call": {"name": "side_effect", "paramters": {"label": "misspelt"}, "id": "fix-2"}}\n```';
      await vault.drop('unread.md', note('Unread', broken));
      const failed = await waitInFolder(vault, 'unread.md', 'Failed');
      const first = resultsOf(failed)[0];
      assert.equal(first?.error?.code, 'INVALID_CALL');
      assert.equal(first?.id, 'fix-2', 'the result is under the id the agent chose');
      const fixed = failed.replace('"paramters"', '"parameters"');
      await writeFile(join(vault.root, 'unread-tmp'), fixed);
      await rm(join(vault.root, 'Failed', 'unread.md'));
      await rename(join(vault.root, 'unread-tmp'), join(vault.root, 'Needs_Action', 'unread.md'));
      const done = await waitInFolder(vault, 'unread.md', 'Done');
      const results = resultsOf(done);
      assert.equal(results.length, 1, 'the new result replaced the old one');
      assert.equal(results[0]?.id, 'fix-2');
      assert.equal(results[0]?.status, 'success');
      assert.equal(await starts('misspelt'), 1);
    });

    it('never runs a successful call again: a re-saved note, or a copy with its explicit id, gets a replay', async () => {
      const text = note('Once', callBlock('side_effect', { label: 'once' }, 'once-1'));
      await vault.drop('once.md', text);
      await waitInFolder(vault, 'once.md', 'Done');
      // The editor saves the original text again (as if the agent's editor re-wrote it), and the
      // agent copies it under another name.
      await vault.drop('once.md', text);
      await vault.drop('once-copy.md', text);
      const again = resultsOf(await waitInFolder(vault, 'once-copy.md', 'Done'))[0];
      assert.equal(again?.status, 'success');
      assert.ok(again?.metadata['replay'], 'marked as a replay');
      await waitFor(async () => (await vault.list('Done')).includes('once-1.md'));
      assert.equal(await starts('once'), 1, 'the call ran once');
    });

    it('never takes a call of another tool with the same explicit id and arguments for a replay (review finding)', async () => {
      // copy_file and move_file take the same parameters: a move with the id and arguments of an
      // earlier copy was answered with the copy's result, marked success, and never ran.
      await vault.drop(
        'monday.md',
        note('Monday', callBlock('side_effect', { label: 'twin' }, 'step1')),
      );
      await waitInFolder(vault, 'monday.md', 'Done');
      await vault.drop(
        'tuesday.md',
        note('Tuesday', callBlock('side_effect_twin', { label: 'twin' }, 'step1')),
      );
      const result = resultsOf(await waitInFolder(vault, 'tuesday.md', 'Failed'))[0];
      assert.equal(result?.status, 'error');
      assert.equal(result?.error?.code, 'INVALID_CALL');
      assert.match(result?.error?.message ?? '', /already named a side_effect call/);
      assert.equal(result?.metadata['replay'], undefined, 'not a replay');
      assert.equal(await starts('twin'), 1, "only Monday's call ran");
    });

    it('counts a note of the same name with a derived id as the same note within the replay window', async () => {
      const text = note('Daily', callBlock('side_effect', { label: 'daily' }));
      await vault.drop('daily.md', text);
      await waitInFolder(vault, 'daily.md', 'Done');
      await vault.drop('daily.md', text);
      await waitFor(async () => (await vault.list('Done')).includes('daily-1.md'));
      const replay = resultsOf(await vault.read('Done', 'daily-1.md'))[0];
      assert.ok(replay?.metadata['replay']);
      // The same call in a note of another name is another call.
      await vault.drop('daily-other.md', text);
      await waitInFolder(vault, 'daily-other.md', 'Done');
      assert.equal(await starts('daily'), 2);
    });
  },
);

describe('e2e: vaultd approve NOTE with several pending calls', { timeout: 120_000 }, () => {
  it('approves every pending call of the note once, and the note moves on to Done', async () => {
    const { vault, dangerLog } = await vaultWith([]);
    const daemon = await startDaemon(vault);
    try {
      await vault.drop(
        'tidy.md',
        note(
          'Tidy',
          callBlock('danger_zone', { target: 'copy' }),
          callBlock('danger_zone', { target: 'move' }),
          callBlock('danger_zone', { target: 'delete' }),
        ),
      );
      await waitPending(vault, 'tidy.md');
      const approved = await runCli(['approve', join(vault.root, 'Pending_Approval', 'tidy.md')]);
      assert.equal(approved.code, 0, approved.stdout + approved.stderr);
      const done = await waitInFolder(vault, 'tidy.md', 'Done', 30_000);
      assert.deepEqual(
        resultsOf(done).map((r) => r.status),
        ['success', 'success', 'success'],
      );
      assert.deepEqual((await readLines(dangerLog)).sort(), ['copy', 'delete', 'move']);
      assert.deepEqual(await vault.list('Pending_Approval'), []);
      assert.deepEqual(await vault.list('In_Progress'), []);
    } finally {
      await stopDaemon(daemon);
      await vault.cleanup();
    }
  });
});
