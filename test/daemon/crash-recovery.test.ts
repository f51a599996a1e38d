import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  callBlock,
  note,
  resultsOf,
  startCli,
  startPluginDaemon,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { appendResults, parseNote } from '../../src/note/index.ts';
import { makePipelineResult } from '../../src/pipeline/make-result.ts';
import { callKey, Ledger } from '../../src/vault/ledger.ts';
import { hashArguments } from '../../src/protocol/hash-arguments.ts';

/**
 * Start a daemon, drop `name` with a quick call and a slow one, and kill -9 the daemon once the
 * quick call's completion is in the ledger and the slow one runs: the note's results are not
 * written yet.
 */
async function killBetweenCalls(name: string): Promise<{ vault: TempVault; sideLog: string }> {
  const { vault, daemon, sideLog } = await startPluginDaemon();
  await vault.drop(
    name,
    note(
      'Pair',
      callBlock('side_effect', { label: 'quick' }, 'quick'),
      callBlock('side_effect', { label: 'slow', ms: 10_000 }, 'slow'),
    ),
  );
  const ledger = join(vault.root, '.vaultd', 'ledger.jsonl');
  await waitFor(
    async () =>
      existsSync(ledger) &&
      /"t":"done","k":"id:quick:/.test(await readFile(ledger, 'utf8')) &&
      /start slow/.test(await readFile(sideLog, 'utf8')),
  );
  daemon.child.kill('SIGKILL');
  await daemon.exited;
  return { vault, sideLog };
}

describe('kill -9 between a finished call and the write-back', () => {
  let vault: TempVault | undefined;
  after(async () => {
    await vault?.cleanup();
  });

  it('writes back the finished call from the ledger and marks only the cut-off one interrupted', async () => {
    const killed = await killBetweenCalls('pair.md');
    vault = killed.vault;
    const { sideLog } = killed;
    assert.equal(await vault.whereIs('pair.md'), 'In_Progress');

    const again = startCli(['run', '--config', vault.configPath]);
    try {
      await again.ready();
      await waitFor(async () => (await vault?.whereIs('pair.md')) === 'Failed');
      const results = resultsOf(await vault.read('Failed', 'pair.md'));
      assert.deepEqual(
        results.map((r) => [r.id, r.status]),
        [
          ['quick', 'success'],
          ['slow', 'interrupted'],
        ],
      );
      const log = await readFile(sideLog, 'utf8');
      assert.equal(log.match(/start quick/g)?.length, 1, 'the finished call did not run again');
      assert.equal(log.match(/start slow/g)?.length, 1, 'the cut-off call did not run again');

      // The agent deletes the interrupted result and moves the note back: vaultd cannot know
      // whether the call acted, so a human decides; approved, it runs again (once).
      const failed = await vault.read('Failed', 'pair.md');
      const from = failed.indexOf('> [!warning] side\\_effect · slow');
      const open = failed.indexOf('````json', from);
      const close = failed.indexOf('\n````', open + 8) + 5;
      const withoutSlow = failed.slice(0, from) + failed.slice(close);
      assert.notEqual(withoutSlow, failed, 'the interrupted result was found and removed');
      await vault.drop('pair.md', withoutSlow);
      await unlink(join(vault.root, 'Failed', 'pair.md'));
      const pending = await waitFor(async () => {
        if ((await vault?.whereIs('pair.md')) !== 'Pending_Approval') return undefined;
        const text = await vault?.read('Pending_Approval', 'pair.md');
        return text?.includes('## Approval') ? text : undefined;
      });
      assert.match(
        pending,
        /may or may not have taken effect; approve only if it should run again/,
      );
      await vault.drop(
        'pair.md',
        pending.replace('- [ ] approve', '- [x] approve'),
        'Pending_Approval',
      );
      await waitFor(async () => (await vault?.whereIs('pair.md')) === 'Done');
      const after = await readFile(sideLog, 'utf8');
      assert.equal(after.match(/start slow/g)?.length, 2, 'run again once, on a human decision');
      assert.equal(after.match(/start quick/g)?.length, 1);
    } finally {
      assert.equal(await again.stop(), 0);
    }
  });

  it('resumes a note whose name left no room for the claim tag, under its own name', async () => {
    // 255 bytes: claimed under its own name, with no tag naming the process (docs/reliability.md).
    const name = `${'研究笔记'.repeat(21)}.md`;
    const { vault: long, sideLog } = await killBetweenCalls(name);
    try {
      assert.deepEqual(await long.list('In_Progress'), [name]);
      const again = startCli(['run', '--config', long.configPath]);
      try {
        await again.ready();
        await waitFor(async () => (await long.whereIs(name)) === 'Failed');
        const results = resultsOf(await long.read('Failed', name));
        assert.deepEqual(
          results.map((r) => [r.id, r.status]),
          [
            ['quick', 'success'],
            ['slow', 'interrupted'],
          ],
        );
        const log = await readFile(sideLog, 'utf8');
        assert.equal(log.match(/start quick/g)?.length, 1);
        assert.equal(log.match(/start slow/g)?.length, 1);
      } finally {
        assert.equal(await again.stop(), 0);
      }
    } finally {
      await long.cleanup();
    }
  });

  it('marks the ledger entry written when the kill came after the write-back, before the ledger heard (review finding)', async () => {
    // On resume the note already had its results, so its calls were skipped and the entry stayed
    // unwritten for good: it never expired, and a later note of the same name had the call
    // replayed for ever instead of run (the replay window of calls without an id).
    const { vault: v, daemon, sideLog } = await startPluginDaemon();
    try {
      assert.equal(await daemon.stop(), 0);
      // A call whose id vaultd derives, and one with the agent's own id.
      const text = note(
        'Daily',
        callBlock('side_effect', { label: 'daily' }),
        callBlock('side_effect', { label: 'paid' }, 'pay-7'),
      );
      const calls = parseNote(text).calls;
      assert.equal(calls.length, 2);
      const ledger = await Ledger.open(join(v.root, '.vaultd'));
      const keys: string[] = [];
      const results = [];
      for (const call of calls) {
        const argsHash = hashArguments({ ...call.arguments, ms: 0 });
        const key = callKey(
          // The arguments as vaultd normalises them (side_effect's ms defaults to 0).
          { id: call.id, explicitId: call.explicitId, argsHash },
          'daily.md',
        );
        keys.push(key);
        await ledger.recordIntent({
          key,
          note: 'In_Progress/daily.md',
          callId: call.id,
          tool: 'side_effect',
          argsHash,
        });
        const failed = makePipelineResult({
          id: call.id,
          name: 'side_effect',
          status: 'error',
          code: 'EXECUTION_FAILED',
          message: 'recorded before the kill',
        });
        const result = { ...failed, success: true, status: 'success' as const, error: null };
        await ledger.recordDone(key, 'success', true, result);
        results.push(result);
      }
      await ledger.close();
      await writeFile(join(v.root, 'In_Progress', 'daily.md'), appendResults(text, results));
      const again = startCli(['run', '--config', v.configPath]);
      try {
        await again.ready();
        await waitFor(async () => (await v.whereIs('daily.md')) === 'Done');
        await waitFor(async () => {
          const lines = await readFile(join(v.root, '.vaultd', 'ledger.jsonl'), 'utf8');
          return keys.every((key) => lines.includes(`"t":"written","k":${JSON.stringify(key)}`));
        });
        assert.equal(existsSync(sideLog), false, 'nothing ran again');
      } finally {
        assert.equal(await again.stop(), 0);
      }
    } finally {
      await v.cleanup();
    }
  });
});
