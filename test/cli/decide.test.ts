// `vaultd approve|reject NOTE` when some calls of the note are already decided, with no daemon
// running: `vaultd once` asks, the CLI hands decisions over, the next `vaultd once` acts on them.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pendingIds, readLines } from '../e2e/helpers.ts';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  runCli,
  TEST_PLUGIN,
  type TempVault,
} from '../helpers/vault.ts';

describe('vaultd approve|reject NOTE with calls already decided', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let dangerLog: string;
  const once = () => runCli(['once', '--config', vault.configPath]);
  const pendingNote = () => join(vault.root, 'Pending_Approval', 'n.md');
  const waitingDecisions = async (): Promise<string[]> => {
    const dir = join(vault.root, '.vaultd', 'decisions');
    return existsSync(dir) ? (await readdir(dir)).filter((n) => n.endsWith('.json')) : [];
  };

  beforeEach(async () => {
    vault = await makeVault();
    dangerLog = join(vault.root, 'danger.log');
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        `plugins:\n  - ${TEST_PLUGIN}\ntools:\n  danger_zone:\n    log: ${dangerLog}\n`,
    );
    await vault.drop(
      'n.md',
      note(
        'Two',
        callBlock('danger_zone', { target: 'one' }, 'x1'),
        callBlock('danger_zone', { target: 'two' }, 'x2'),
      ),
    );
    const first = await once();
    assert.equal(first.code, 0, first.stdout + first.stderr);
    assert.deepEqual(pendingIds(await vault.read('Pending_Approval', 'n.md')), ['x1', 'x2']);
  });
  afterEach(() => vault.cleanup());

  it('approves the undecided calls, names the ones skipped as already decided, exit 0', async () => {
    const rejected = await runCli(['reject', pendingNote(), '--call', 'x2', '--reason', 'no']);
    assert.equal(rejected.code, 0, rejected.stderr);
    assert.match(
      rejected.stdout,
      /^rejected: apr_\w+ \(danger_zone · x2 in Pending_Approval\/n\.md\)$/m,
    );

    const approved = await runCli(['approve', pendingNote()]);
    assert.equal(approved.code, 0, approved.stdout + approved.stderr);
    assert.equal(approved.stderr, '');
    assert.match(
      approved.stdout,
      /^approved: apr_\w+ \(danger_zone · x1 in Pending_Approval\/n\.md\)$/m,
    );
    assert.match(
      approved.stdout,
      /^skipped: apr_\w+ \(danger_zone · x2 in Pending_Approval\/n\.md\): already rejected \(waiting for the daemon\)$/m,
    );
    assert.doesNotMatch(approved.stdout, /^approved: apr_\w+ \(danger_zone · x2 in /m);

    // Everything is decided now: a second approve or a reject decides nothing, says why, exit 1.
    for (const decision of ['approve', 'reject']) {
      const again = await runCli([decision, pendingNote()]);
      assert.equal(again.code, 1, again.stdout);
      assert.equal(again.stdout, '');
      assert.match(again.stderr, /x1 in Pending_Approval\/n\.md\): already approved \(waiting/);
      assert.match(again.stderr, /x2 in Pending_Approval\/n\.md\): already rejected \(waiting/);
      assert.match(
        again.stderr,
        new RegExp(`^vaultd: nothing ${decision === 'approve' ? 'approved' : 'rejected'}$`, 'm'),
      );
    }

    const second = await once();
    assert.equal(second.code, 0, second.stdout + second.stderr);
    const end = await vault.read('Rejected', 'n.md');
    assert.deepEqual(
      resultsOf(end).map((r) => [r.id, r.status]),
      [
        ['x1', 'success'],
        ['x2', 'rejected'],
      ],
    );
    assert.deepEqual(await readLines(dangerLog), ['one']);
  });

  it('rejects the undecided calls the same way when one is already approved', async () => {
    const approved = await runCli(['approve', pendingNote(), '--call', 'x1']);
    assert.equal(approved.code, 0, approved.stderr);
    const rejected = await runCli(['reject', pendingNote(), '--reason', 'not that']);
    assert.equal(rejected.code, 0, rejected.stdout + rejected.stderr);
    assert.match(rejected.stdout, /^rejected: apr_\w+ \(danger_zone · x2 in /m);
    assert.match(rejected.stdout, /^skipped: apr_\w+ \(danger_zone · x1 in .*already approved/m);
    await once();
    assert.deepEqual(
      resultsOf(await vault.read('Rejected', 'n.md')).map((r) => [r.id, r.status]),
      [
        ['x1', 'success'],
        ['x2', 'rejected'],
      ],
    );
  });

  it('after a run acted on one decision, approve NOTE decides the rest without a word on it', async () => {
    const rejected = await runCli(['reject', pendingNote(), '--call', 'x2']);
    assert.equal(rejected.code, 0, rejected.stderr);
    // A run acts on the rejection (x2 gets its result); the note waits for x1.
    await once();
    assert.deepEqual(await waitingDecisions(), []);
    assert.deepEqual(pendingIds(await vault.read('Pending_Approval', 'n.md')), ['x1']);
    const approved = await runCli(['approve', pendingNote()]);
    assert.equal(approved.code, 0, approved.stdout + approved.stderr);
    assert.match(approved.stdout, /^approved: apr_\w+ \(danger_zone · x1 in /m);
    // x2 is named only as a call (`tool · id in note`), never matched inside the random request id.
    assert.doesNotMatch(approved.stdout, / · x2 in /);
  });

  it('decides nothing when --scope does not fit every call it would decide', async () => {
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) + 'policy:\n  ask:\n    - side_effect\n',
    );
    await vault.drop(
      'm.md',
      note(
        'Mixed',
        callBlock('danger_zone', { target: 'three' }, 'm1'),
        callBlock('side_effect', { label: 'hi' }, 'm2'),
      ),
    );
    await once();
    assert.deepEqual(pendingIds(await vault.read('Pending_Approval', 'm.md')), ['m1', 'm2']);
    const approved = await runCli([
      'approve',
      join(vault.root, 'Pending_Approval', 'm.md'),
      '--scope',
      'danger_zone(target:t*)',
    ]);
    assert.equal(approved.code, 2, approved.stdout + approved.stderr);
    assert.match(approved.stderr, /does not name side_effect/);
    assert.deepEqual(await waitingDecisions(), []);
    // A tool whose name only begins with the call's is another tool (review finding: the check
    // compared the start of the scope).
    const longer = await runCli([
      'approve',
      join(vault.root, 'Pending_Approval', 'm.md'),
      '--scope',
      'danger_zone_twin(target:t*)',
    ]);
    assert.equal(longer.code, 2, longer.stdout + longer.stderr);
    assert.match(longer.stderr, /does not name danger_zone/);
    assert.deepEqual(await waitingDecisions(), []);
  });

  it('--scope without --always approves and stores the scoped grant, as the HTTP API does', async () => {
    const approved = await runCli([
      'approve',
      pendingNote(),
      '--call',
      'x1',
      '--scope',
      'danger_zone(target:o*)',
    ]);
    assert.equal(approved.code, 0, approved.stdout + approved.stderr);
    assert.match(approved.stdout, /^approved: apr_\w+ \(danger_zone · x1 in /m);
    const second = await once();
    assert.equal(second.code, 0, second.stdout + second.stderr);
    const grants = JSON.parse(
      await readFile(join(vault.root, '.vaultd', 'grants.json'), 'utf8'),
    ) as {
      grants: { rule: string; channel: string }[];
    };
    assert.deepEqual(
      grants.grants.map((g) => [g.rule, g.channel]),
      [['danger_zone(target:o*)', 'cli']],
    );
    assert.deepEqual(await readLines(dangerLog), ['one']);
  });
});
