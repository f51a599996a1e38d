import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeVault, runCli, type TempVault } from '../helpers/vault.ts';

// Every command but init takes a vault that exists; a typo must never create one.
describe('a path that is not a vault', () => {
  let vault: TempVault;
  let scratch: string;
  before(async () => {
    vault = await makeVault();
    scratch = await mkdtemp(join(tmpdir(), 'vaultd-typo-'));
    await writeFile(join(scratch, 'note.md'), '# a note to check\n');
  });
  after(async () => {
    await vault.cleanup();
    await rm(scratch, { recursive: true, force: true });
  });

  const commands: string[][] = [
    ['run'],
    ['once'],
    ['status'],
    ['grants'],
    ['approvals'],
    ['tools'],
    ['check', 'NOTE'],
  ];
  for (const command of commands) {
    it(`${command[0]} --vault with a typo exits 2 in one line and creates nothing`, async () => {
      const typo = `${vault.root}x`;
      const args = command.map((a) => (a === 'NOTE' ? join(scratch, 'note.md') : a));
      const res = await runCli([...args, '--vault', typo]);
      assert.equal(res.code, 2, res.stdout + res.stderr);
      const lines = res.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, res.stderr);
      assert.match(lines[0]!, new RegExp(`^vaultd: ${typo} is not a vault: it does not exist`));
      assert.match(lines[0]!, /--vault/);
      assert.match(lines[0]!, new RegExp(`vaultd init ${typo}$`));
      assert.equal(existsSync(typo), false, 'the mistyped folder was created');
    });
  }

  it('a folder that exists but is no vault is refused too, and left as it was', async () => {
    const dir = join(scratch, 'notes');
    await mkdir(dir);
    await writeFile(join(dir, 'a.md'), '# a\n');
    const res = await runCli(['once', '--vault', dir]);
    assert.equal(res.code, 2, res.stderr);
    assert.match(res.stderr, /has no Needs_Action\/ and no \.vaultd\//);
    assert.deepEqual(await readdir(dir), ['a.md']);
  });

  it('without a config or a vault anywhere, status and reject say how to give one, exit 2', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'vaultd-noconfig-'));
    try {
      for (const args of [['status'], ['reject', 'apr_0123456789'], ['approvals']]) {
        const res = await runCli(args, { VAULTD_CONFIG: '' }, { cwd: empty });
        assert.equal(res.code, 2, res.stdout + res.stderr);
        assert.equal(res.stderr.trimEnd().split('\n').length, 1, res.stderr);
        assert.match(res.stderr, /^vaultd: no config file and no vault found: /);
        assert.doesNotMatch(res.stderr, /invalid config/);
        for (const way of ['--config FILE', '--vault DIR', '$VAULTD_CONFIG', 'vaultd.yaml']) {
          assert.ok(res.stderr.includes(way), `${args[0]} names ${way}: ${res.stderr}`);
        }
      }
      assert.deepEqual(await readdir(empty), []);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('a config whose vault is missing names the file and how it was found, and init --config', async () => {
    const config = join(scratch, 'elsewhere.yaml');
    await writeFile(config, 'vault: ./no-such-vault\n');
    const res = await runCli(['status', '--config', config]);
    assert.equal(res.code, 2);
    assert.equal(res.stderr.trimEnd().split('\n').length, 1, res.stderr);
    assert.match(res.stderr, new RegExp(`named by 'vault' in ${config} \\(--config\\)`));
    assert.match(res.stderr, new RegExp(`vaultd init --config ${config}$`, 'm'));
    const viaEnv = await runCli(['status'], { VAULTD_CONFIG: config });
    assert.equal(viaEnv.code, 2);
    assert.match(viaEnv.stderr, /\(\$VAULTD_CONFIG\)/);
    assert.equal(existsSync(join(scratch, 'no-such-vault')), false);
  });

  it('init --config sets up the vault the config names, without writing a vaultd.yaml into it', async () => {
    const config = join(scratch, 'etc.yaml');
    await writeFile(
      config,
      'vault: ./made-by-init\nfolders:\n  inbox: Inbox\nmax_calls_per_note: 50\n',
    );
    const res = await runCli(['init', '--config', config]);
    assert.equal(res.code, 0, res.stderr);
    const made = join(scratch, 'made-by-init');
    assert.match(res.stdout, new RegExp(`vault ready at ${made}`));
    assert.match(res.stdout, new RegExp(`wrote ${join(made, 'TOOLS.md')}`));
    assert.ok(existsSync(join(made, 'Inbox')), 'the configured inbox name is used');
    // TOOLS.md tells agents this vault's inbox and limits, not the defaults.
    const tools = await readFile(join(made, 'TOOLS.md'), 'utf8');
    assert.match(tools, /^Write a note into `Inbox\/`/m);
    assert.match(tools, /\n50 calls waiting for a result/);
    assert.equal(existsSync(join(made, 'vaultd.yaml')), false);
    const status = await runCli(['status', '--config', config, '--json']);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).folders.Inbox, 0);
  });

  it('init without a folder refuses a current folder that is neither empty nor a vault', async () => {
    const dir = join(scratch, 'busy');
    await mkdir(dir);
    await writeFile(join(dir, 'thesis.md'), '# mine\n');
    const res = await runCli(['init'], {}, { cwd: dir });
    assert.equal(res.code, 2);
    assert.match(res.stderr, /neither empty nor a vault/);
    assert.deepEqual(await readdir(dir), ['thesis.md']);
  });

  it('init without a folder uses an empty current folder and says where it wrote', async () => {
    const dir = join(scratch, 'empty');
    await mkdir(dir);
    const res = await runCli(['init'], {}, { cwd: dir });
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`^vault ready at ${dir}$`, 'm'));
    assert.match(res.stdout, new RegExp(`wrote ${join(dir, 'vaultd.yaml')}`));
    assert.match(res.stdout, new RegExp(`wrote ${join(dir, 'TOOLS.md')}`));
    assert.ok(existsSync(join(dir, 'Needs_Action')));
    // Run again in the vault it made: it is a vault now, and its config is kept.
    await writeFile(join(dir, 'vaultd.yaml'), '# edited\nvault: .\n');
    const again = await runCli(['init'], {}, { cwd: dir });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /kept .*vaultd\.yaml \(already there\)/);
    assert.equal(await readFile(join(dir, 'vaultd.yaml'), 'utf8'), '# edited\nvault: .\n');
  });

  it('init with an explicit folder makes an existing folder of notes a vault', async () => {
    const dir = join(scratch, 'obsidian');
    await mkdir(dir);
    await writeFile(join(dir, 'Daily.md'), '# today\n');
    const res = await runCli(['init', dir]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`created ${join(dir, 'Needs_Action')}/`));
    assert.ok(existsSync(join(dir, 'Daily.md')));
    const once = await runCli(['once', '--vault', dir, '--no-progress']);
    assert.equal(once.code, 0, once.stderr);
  });
});
