// Agents name notes and write arguments; the CLI prints them on the operator's terminal. A name
// holding ESC sequences, carriage returns or line feeds must not erase, forge or reorder what
// `vaultd approvals`, `vaultd approve` or `vaultd status` show (/work/scratch/redteam4/cli-escapes.mts).
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { printable } from '../../src/cli/printable.ts';
import {
  callBlock,
  makeVault,
  note,
  runCli,
  TEST_PLUGIN,
  type TempVault,
} from '../helpers/vault.ts';

// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const TERMINAL_COMMANDS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

it('printable shows control and bidi characters as escapes, other text as it is', () => {
  assert.equal(
    printable('a\x1b[2K\rb\nc\u009bd\u202ee'),
    'a\\u001b[2K\\u000db\\u000ac\\u009bd\\u202ee',
  );
  assert.equal(printable('Notes/été · 日本.md'), 'Notes/été · 日本.md');
});

describe('a note name holding terminal escapes', { timeout: 120_000 }, () => {
  let vault: TempVault;
  // Erase the line, go back to its start, print a harmless-looking request; a second line
  // (a line feed in the name) forged below it; the clipboard set through OSC 52.
  const name =
    'x\x1b[2K\rapr_fake  send_notification · ok  weekly.md\nforged line\u202e\x1b]52;c;dmF1bHQ=\x07.md';

  beforeEach(async () => {
    vault = await makeVault();
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        `plugins:\n  - ${TEST_PLUGIN}\ntools:\n  danger_zone:\n    log: ${join(vault.root, 'danger.log')}\n`,
    );
    await vault.drop(name, note('t', callBlock('danger_zone', { target: 'rm -rf /' }, 'x1')));
    // A tool name with escapes: refused, and counted in the execution log under that name.
    await vault.drop('bad.md', note('t', callBlock('x\x1b[2K\rfake', {})));
    const once = await runCli(['once', '--config', vault.configPath]);
    assert.equal(once.code, 0, once.stderr);
  });
  afterEach(() => vault.cleanup());

  it('is printed escaped by vaultd approvals, status, check and approve', async () => {
    const approvals = await runCli(['approvals', '--config', vault.configPath]);
    assert.equal(approvals.code, 0, approvals.stderr);
    assert.doesNotMatch(approvals.stdout, TERMINAL_COMMANDS);
    // One request: its line and its arguments' line, nothing forged between them.
    assert.equal(approvals.stdout.split('\n').length, 3, approvals.stdout);
    assert.match(approvals.stdout, /x\\u001b\[2K\\u000dapr_fake/);
    const id = /^(apr_\w+) /.exec(approvals.stdout)?.[1] ?? '';

    const status = await runCli(['status', '--config', vault.configPath]);
    assert.equal(status.code, 0, status.stderr);
    assert.doesNotMatch(status.stdout, TERMINAL_COMMANDS);
    assert.doesNotMatch(status.stdout, /^forged line/m);

    // `check` on the vault: the note's path (in Pending_Approval/) and the refused tool's name.
    const check = await runCli(['check', vault.root, '--config', vault.configPath]);
    assert.ok(check.stdout.includes('apr_fake'), check.stdout + check.stderr);
    assert.doesNotMatch(check.stdout + check.stderr, TERMINAL_COMMANDS);
    assert.doesNotMatch(check.stdout, /^forged line/m);

    const approve = await runCli(['approve', id, '--config', vault.configPath]);
    assert.equal(approve.code, 0, approve.stderr);
    assert.doesNotMatch(approve.stdout + approve.stderr, TERMINAL_COMMANDS);
    assert.doesNotMatch(approve.stdout, /^forged line/m);
  });
});

describe(
  '--json output of a note name and arguments holding C1 and bidi characters (review F5)',
  {
    timeout: 120_000,
  },
  () => {
    // U+009B is a one-byte CSI on some terminals (here "erase the screen"); U+202E reverses what
    // follows. JSON.stringify escapes only C0 controls: --json printed both raw.
    const name = 'x\u009b2J\u202eabc.md';
    const target = 't\u009b31m\u202eevil';
    const RAW = /[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/u;
    let vault: TempVault;

    /** Every string in a parsed JSON value. */
    const strings = (value: unknown): string[] =>
      typeof value === 'string'
        ? [value]
        : typeof value === 'object' && value !== null
          ? Object.values(value).flatMap(strings)
          : [];

    beforeEach(async () => {
      vault = await makeVault();
      await writeFile(
        vault.configPath,
        (await readFile(vault.configPath, 'utf8')) +
          `plugins:\n  - ${TEST_PLUGIN}\ntools:\n  danger_zone:\n    log: ${join(vault.root, 'danger.log')}\n`,
      );
      await vault.drop(name, note('t', callBlock('danger_zone', { target }, 'c1')));
      const once = await runCli(['once', '--config', vault.configPath]);
      assert.equal(once.code, 0, once.stderr);
    });
    afterEach(() => vault.cleanup());

    it('is escaped by vaultd approvals, status, check and grants --json, and parses to the same values', async () => {
      const approvals = await runCli(['approvals', '--json', '--config', vault.configPath]);
      assert.equal(approvals.code, 0, approvals.stderr);
      assert.doesNotMatch(approvals.stdout, RAW);
      const [request] = JSON.parse(approvals.stdout) as {
        id: string;
        note: string;
        arguments: Record<string, unknown>;
      }[];
      assert.ok(request, approvals.stdout);
      assert.equal(request.note, `Pending_Approval/${name}`);
      assert.deepEqual(request.arguments, { target });
      assert.ok(approvals.stdout.includes('\\u009b2J\\u202eabc.md'), approvals.stdout);

      const status = await runCli(['status', '--json', '--config', vault.configPath]);
      assert.equal(status.code, 0, status.stderr);
      assert.doesNotMatch(status.stdout, RAW);
      assert.ok(
        strings(JSON.parse(status.stdout)).some((s) => s.includes(name)),
        status.stdout,
      );

      const check = await runCli(['check', vault.root, '--json', '--config', vault.configPath]);
      assert.doesNotMatch(check.stdout, RAW);
      assert.ok(
        strings(JSON.parse(check.stdout)).some((s) => s.includes(name)),
        check.stdout,
      );

      // A grant whose rule and note carry them too.
      const scope = 'danger_zone(target:t\u009b*)';
      const approve = await runCli([
        'approve',
        request.id,
        '--scope',
        scope,
        '--config',
        vault.configPath,
      ]);
      assert.equal(approve.code, 0, approve.stdout + approve.stderr);
      const again = await runCli(['once', '--config', vault.configPath]);
      assert.equal(again.code, 0, again.stderr);
      const grants = await runCli(['grants', '--json', '--config', vault.configPath]);
      assert.equal(grants.code, 0, grants.stderr);
      assert.doesNotMatch(grants.stdout, RAW);
      const [grant] = JSON.parse(grants.stdout) as { rule: string; note: string | null }[];
      assert.equal(grant?.rule, scope, grants.stdout);
      assert.ok(grant.note?.includes(name), grants.stdout);
    });
  },
);
