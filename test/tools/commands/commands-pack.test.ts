// Command tools from config, end to end from notes: an argv filled from validated parameters
// (never a shell, never split), in the vault, optionally in the bubblewrap sandbox.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { fillArgv } from '../../../src/tools/commands/argv.ts';
import { commandTool } from '../../../src/tools/commands/index.ts';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  ROOT,
  runCli,
  type DaemonProcess,
  type TempVault,
} from '../../helpers/vault.ts';
import { startDaemon, stopDaemon, waitInFolder } from '../../e2e/helpers.ts';

describe('command argv templates', () => {
  it('fills each placeholder inside its own element, and a list as one argument per item', () => {
    assert.deepEqual(
      fillArgv(['deploy', '--env={environment}', '{targets}', '{missing}'], {
        environment: 'prod; rm -rf /',
        targets: ['a b', '-x'],
      }),
      ['deploy', '--env=prod; rm -rf /', 'a b', '-x'],
    );
    assert.throws(() => fillArgv(['--to={who}'], {}), /parameter 'who' is needed/);
  });

  it("docs/tools/commands.md's example pattern keeps option-like targets out", () => {
    const doc = readFileSync(join(ROOT, 'docs/tools/commands.md'), 'utf8');
    const pattern = /targets: \{ type: array, items: \{ type: string, pattern: '([^']+)' \}/.exec(
      doc,
    )?.[1];
    assert.ok(pattern, 'the example declares a pattern for targets');
    const re = new RegExp(pattern, 'u');
    for (const value of ['-rf', '-', '--force', '']) assert.equal(re.test(value), false, value);
    for (const value of ['web', 'web-1', 'api2']) assert.equal(re.test(value), true, value);
  });

  it('refuses a command whose argv names an undeclared parameter', () => {
    assert.throws(
      () =>
        commandTool({
          name: 'bad',
          description: 'x',
          argv: ['/bin/echo', '{nope}'],
          parameters: {},
          required: [],
          safety: 'safe',
          cwd: '.',
          timeoutMs: undefined,
          env: {},
          sandbox: false,
          paths: {},
        }),
      /argv names \{nope\}/,
    );
  });
});

describe('TOOLS.md of a vault with command tools', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-commands-init-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("vaultd init lists the command tools of the vault's config, with their parameters", async () => {
    await writeFile(
      join(dir, 'vaultd.yaml'),
      [
        'vault: .',
        'tools:',
        '  commands:',
        '    wordcount:',
        '      description: Count the words of a note.',
        "      argv: [/usr/bin/wc, -w, '{file}']",
        '      parameters: { file: { type: string, description: the note } }',
        '      required: [file]',
        '      paths: { file: read }',
        '',
      ].join('\n'),
    );
    const res = await runCli(['init', dir]);
    assert.equal(res.code, 0, res.stderr);
    const tools = await readFile(join(dir, 'TOOLS.md'), 'utf8');
    assert.match(tools, /^## wordcount$/m);
    assert.match(tools, /^Safety: \*\*dangerous\*\* \(waits for a human\)\.$/m);
    assert.match(tools, /^\| `file` \| string \| yes \| {2}\| the note \|$/m);
  });

  it('vaultd init refuses a command it cannot list as bad config (exit 2); status still reads the vault', async () => {
    const vault = join(dir, 'bad');
    await mkdir(vault);
    await writeFile(
      join(vault, 'vaultd.yaml'),
      "vault: .\ntools:\n  commands:\n    bad:\n      description: x\n      argv: [/bin/echo, '{nope}']\n",
    );
    const res = await runCli(['init', vault]);
    assert.equal(res.code, 2, res.stdout + res.stderr);
    assert.match(res.stderr, /config key 'tools\.commands': command bad: its argv names \{nope\}/);
    await mkdir(join(vault, 'Needs_Action'));
    const status = await runCli(['status', '--config', join(vault, 'vaultd.yaml')]);
    assert.equal(status.code, 0, status.stderr);
  });
});

describe('commands pack end to end', { timeout: 60_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  before(async () => {
    vault = await makeVault();
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        [
          'tools:',
          '  commands:',
          '    greet:',
          '      description: Greet someone.',
          "      argv: [/bin/echo, 'hello', '{name}']",
          '      parameters: { name: { type: string, maxLength: 100 } }',
          '      required: [name]',
          '      safety: safe',
          '    touch_outside:',
          '      description: Try to write outside the working directory.',
          "      argv: [/bin/sh, -c, 'touch /etc/vaultd-sandbox-test && echo wrote']",
          '      safety: safe',
          '      sandbox: true',
          '    fails:',
          '      description: Exit 3.',
          "      argv: [/bin/sh, -c, 'echo broken >&2; exit 3']",
          '      safety: safe',
          '',
        ].join('\n'),
    );
    daemon = await startDaemon(vault);
  });
  after(async () => {
    assert.equal(await stopDaemon(daemon), 0, daemon.output().slice(-2000));
    await vault.cleanup();
  });

  it('runs the program with the value as one argument, never through a shell', async () => {
    await vault.drop(
      'greet.md',
      note('Greet', callBlock('greet', { name: 'World; touch /tmp/pwned $(id)' }, 'g')),
    );
    const [result] = resultsOf(await waitInFolder(vault, 'greet.md', 'Done'));
    assert.equal(
      (result?.data as { stdout: string }).stdout,
      'hello World; touch /tmp/pwned $(id)\n',
    );
    assert.equal(existsSync('/tmp/pwned'), false);
  });

  it('reports a failing command with its exit code and stderr, and keeps a sandboxed one in', async () => {
    await vault.drop(
      'fail.md',
      note('Fail', callBlock('fails', {}, 'f'), callBlock('touch_outside', {}, 't')),
    );
    const results = resultsOf(await waitInFolder(vault, 'fail.md', 'Failed'));
    const failed = results.find((r) => r.id === 'f');
    assert.equal(failed?.error?.code, 'EXECUTION_FAILED');
    assert.match(failed?.error?.message ?? '', /exit code 3\): broken/);
    assert.equal(results.find((r) => r.id === 't')?.error?.code, 'EXECUTION_FAILED');
    assert.equal(existsSync('/etc/vaultd-sandbox-test'), false);
  });
});

describe('command tools with path parameters', { timeout: 60_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  before(async () => {
    vault = await makeVault(
      [
        'policy:',
        '  deny:',
        "    - 'show(file:Private/*)'",
        '  allow:',
        "    - 'show(file:Notes/*)'",
        'tools:',
        '  commands:',
        '    show:',
        '      description: Print the path of a file and its first line.',
        '      argv: [/bin/sh, -c, \'echo "$1"; head -n 1 "$1"\', show, \'{file}\']',
        '      parameters: { file: { type: string } }',
        '      required: [file]',
        '      paths: { file: read }',
        '    stamp:',
        '      description: Write a file.',
        "      argv: [/bin/sh, -c, 'echo stamped > \"$1\"', stamp, '{file}']",
        '      parameters: { file: { type: string } }',
        '      required: [file]',
        '      safety: safe',
        '      paths: { file: write }',
        '',
      ].join('\n'),
    );
    await mkdir(join(vault.root, 'Notes'), { recursive: true });
    await mkdir(join(vault.root, 'Private'), { recursive: true });
    await writeFile(join(vault.root, 'Notes', 'a.md'), 'note a\n');
    await writeFile(join(vault.root, 'Private', 'secret.md'), 'the secret\n');
    await symlink('../Private', join(vault.root, 'Notes', 'lnk'));
    daemon = await startDaemon(vault);
  });
  after(async () => {
    assert.equal(await stopDaemon(daemon), 0, daemon.output().slice(-2000));
    await vault.cleanup();
  });

  it('gives the program the real absolute path of a file an allow rule covers, with no human', async () => {
    await vault.drop('show.md', note('Show', callBlock('show', { file: './Notes//a.md' }, 's')));
    const [result] = resultsOf(await waitInFolder(vault, 'show.md', 'Done'));
    const real = await realpath(join(vault.root, 'Notes', 'a.md'));
    assert.equal((result?.data as { stdout: string }).stdout, `${real}\nnote a\n`);
  });

  it('denies another spelling of a denied path: .., a link, the absolute path', async () => {
    const spellings = [
      'Notes/../Private/secret.md',
      'Notes/lnk/secret.md',
      join(vault.root, 'Private', 'secret.md'),
    ];
    await vault.drop(
      'sneak.md',
      note('Sneak', ...spellings.map((file, i) => callBlock('show', { file }, `p${i}`))),
    );
    const results = resultsOf(await waitInFolder(vault, 'sneak.md', 'Failed'));
    assert.equal(results.length, spellings.length);
    for (const r of results) {
      assert.equal(r.error?.code, 'PERMISSION_DENIED', JSON.stringify(r));
      assert.doesNotMatch(JSON.stringify(r), /the secret/);
    }
  });

  it("refuses a path outside the roots, and a write path into vaultd's state", async () => {
    await vault.drop(
      'out.md',
      note(
        'Out',
        callBlock('stamp', { file: '/tmp/vaultd-command-path-test' }, 'o'),
        callBlock('stamp', { file: '.vaultd/grants.json' }, 'g'),
      ),
    );
    const results = resultsOf(await waitInFolder(vault, 'out.md', 'Failed'));
    assert.deepEqual(
      results.map((r) => [r.id, r.error?.code]),
      [
        ['o', 'PERMISSION_DENIED'],
        ['g', 'PERMISSION_DENIED'],
      ],
    );
    assert.equal(existsSync('/tmp/vaultd-command-path-test'), false);
    assert.doesNotMatch(
      await readFile(join(vault.root, '.vaultd', 'grants.json'), 'utf8').catch(() => ''),
      /stamped/,
    );
  });
});
