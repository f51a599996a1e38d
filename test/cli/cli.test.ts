import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  BIN,
  callBlock,
  makeVault,
  note,
  ROOT,
  runCli,
  startCli,
  STATE_FOLDERS,
  type TempVault,
} from '../helpers/vault.ts';

describe('vaultd CLI as a child process', () => {
  let vault: TempVault;
  before(async () => {
    vault = await makeVault();
  });
  after(async () => {
    await vault.cleanup();
  });

  it('init creates the folders, a commented config that loads, and TOOLS.md from the registry', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vaultd-init-'));
    try {
      const { code, stdout } = await runCli(['init', dir]);
      assert.equal(code, 0);
      assert.match(stdout, /vault ready/);
      for (const folder of [...STATE_FOLDERS, 'Logs']) {
        assert.ok(existsSync(join(dir, folder)), folder);
      }
      const config = await readFile(join(dir, 'vaultd.yaml'), 'utf8');
      assert.match(config, /^#/m, 'the sample config is commented');
      const tools = await readFile(join(dir, 'TOOLS.md'), 'utf8');
      assert.match(tools, /## search_web/);
      assert.match(tools, /## send_notification/);
      assert.match(tools, /\| `query` \| string \| yes \|/);
      // A default is said once, in its own column.
      assert.match(tools, /\| parameter \| type \| required \| default \| description \|/);
      assert.match(
        tools,
        /\| `num_results` \| integer \| no \| `5` \| How many hits to return, 1 to 20\. \|/,
      );
      assert.doesNotMatch(tools, /[Dd]efault 5/);
      // The limits an agent's note meets, from the vault's config.
      assert.match(tools, /more than 5242880 bytes, or with more than\n10000 calls waiting/);
      // The written config is valid: status reads it.
      const status = await runCli(['status', '--config', join(dir, 'vaultd.yaml'), '--json']);
      assert.equal(status.code, 0, status.stderr);
      assert.equal(JSON.parse(status.stdout).folders.Needs_Action, 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('check lists what would run and every problem with line and column, exit 1 on invalid', async () => {
    const good = join(vault.root, 'good.md');
    const bad = join(vault.root, 'bad.md');
    await writeFile(good, note('Good', callBlock('search_web', { query: 'x' })));
    await writeFile(
      bad,
      note(
        'Bad',
        '```json\n{"tool_call": {"name": "search_web", "parameters": {"query": 1}}}\n```',
        '```json\n{"tool_call": oops}\n```',
      ),
    );
    const ok = await runCli(['check', '--config', vault.configPath, good]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /good\.md:6:1: ok WOULD_RUN search_web/);
    const res = await runCli(['check', '--config', vault.configPath, bad, '--json']);
    assert.equal(res.code, 1);
    const findings = JSON.parse(res.stdout) as {
      line: number;
      column: number;
      code: string;
      message: string;
    }[];
    const params = findings.find((f) => f.code === 'INVALID_PARAMS');
    assert.ok(params, res.stdout);
    assert.equal(params.line, 6);
    assert.match(params.message, /query/);
    const json = findings.find((f) => f.code === 'INVALID_JSON');
    assert.ok(json, res.stdout);
    assert.equal(json.line, 11, 'the line of the JSON error inside the block');
    // check runs nothing: the notes are where they were, unchanged.
    assert.equal(
      await readFile(good, 'utf8'),
      note('Good', callBlock('search_web', { query: 'x' })),
    );
  });

  it('check works without a config and says a dangerous call would ask first', async () => {
    const path = join(vault.root, 'danger.md');
    await writeFile(
      path,
      note(
        'D',
        callBlock('send_notification', {
          recipient: 'a@example.com',
          subject: 's',
          body: 'b',
          method: 'outbox',
        }),
      ),
    );
    const res = await runCli(['check', path]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /would ask a human first/);
  });

  it('tools prints the registry as a table, JSON and each model API format', async () => {
    const table = await runCli(['tools']);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /search_web +safe/);
    assert.match(table.stdout, /send_notification +dangerous/);
    const json = JSON.parse((await runCli(['tools', '--json'])).stdout) as {
      name: string;
      inputSchema: { type: string };
    }[];
    assert.deepEqual(json.map((t) => t.name).sort(), ['search_web', 'send_notification']);
    assert.equal(json[0]?.inputSchema.type, 'object');
    const openai = JSON.parse((await runCli(['tools', '--format', 'openai'])).stdout) as {
      type: string;
      function: { name: string };
    }[];
    assert.equal(openai[0]?.type, 'function');
    const anthropic = JSON.parse((await runCli(['tools', '--format', 'anthropic'])).stdout) as {
      input_schema: unknown;
    }[];
    assert.ok(anthropic[0]?.input_schema);
    const mcp = JSON.parse((await runCli(['tools', '--format', 'mcp'])).stdout) as {
      name: string;
      inputSchema: unknown;
      annotations: { destructiveHint: boolean };
    }[];
    assert.equal(
      mcp.find((t) => t.name === 'send_notification')?.annotations.destructiveHint,
      true,
    );
    const badFormat = await runCli(['tools', '--format', 'xml']);
    assert.equal(badFormat.code, 2);
  });

  it("tools and check warn (exit 0) when a keyed search provider's API key variable is not set", async () => {
    const path = join(vault.root, 'brave.yaml');
    await writeFile(
      path,
      'vault: .\ntools:\n  search_web:\n    provider: brave\n    api_key_env: VAULTD_TEST_UNSET_KEY\n',
    );
    const env = { VAULTD_TEST_UNSET_KEY: '' };
    const tools = await runCli(['tools', '--config', path], env);
    assert.equal(tools.code, 0, tools.stderr);
    assert.match(
      tools.stderr,
      /^vaultd: warning: search_web: provider 'brave' reads its API key from the environment variable VAULTD_TEST_UNSET_KEY \(named by tools\.search_web\.api_key_env\)/,
    );
    const file = join(vault.root, 'key.md');
    await writeFile(file, note('Key', callBlock('search_web', { query: 'x' })));
    const check = await runCli(['check', '--config', path, file], env);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /key\.md:1:1: warning CONFIG search_web: .*VAULTD_TEST_UNSET_KEY/);
    const set = await runCli(['tools', '--config', path], { VAULTD_TEST_UNSET_KEY: 'a-key' });
    assert.equal(set.stderr, '');
  });

  it('ends quietly with exit 0 when the reader of its output goes away (vaultd tools | head -1)', async () => {
    for (const args of [['tools'], ['tools', '--json']]) {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Closed before the command writes a byte: every write it makes fails with EPIPE.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | string>((resolve) =>
        child.on('exit', (c, sig) => resolve(c ?? sig ?? -1)),
      );
      assert.equal(stderr, '', args.join(' '));
      assert.equal(code, 0, args.join(' '));
    }
  });

  it('refuses a bad config with exit 2 and a message naming the key', async () => {
    const path = join(vault.root, 'bad.yaml');
    await writeFile(path, 'vault: .\nconcurency: 3\ntimeout_ms: soon\n');
    const res = await runCli(['run', '--config', path]);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /concurency/);
    assert.match(res.stderr, /did you mean 'concurrency'/);
    assert.match(res.stderr, /timeout_ms/);
  });

  it("refuses a bad VAULTD_LOG_LEVEL with exit 2, as the variable's problem, not the config's", async () => {
    const res = await runCli(['status', '--config', vault.configPath], {
      VAULTD_LOG_LEVEL: 'loud',
    });
    assert.equal(res.code, 2);
    assert.equal(res.stderr.trimEnd().split('\n').length, 1, res.stderr);
    assert.match(
      res.stderr,
      /^vaultd: environment variable VAULTD_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent \(got 'loud'\)/,
    );
    assert.doesNotMatch(res.stderr, /invalid config/);
  });

  it('substitutes ${ENV} in the config and reports a missing variable by key', async () => {
    const path = join(vault.root, 'env.yaml');
    await writeFile(
      path,
      'vault: .\ntools:\n  send_notification:\n    email:\n      pass: ${VAULTD_TEST_MISSING_SECRET}\n',
    );
    const res = await runCli(['status', '--config', path]);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /VAULTD_TEST_MISSING_SECRET/);
  });

  it('refuses a second daemon on the same vault with a clear message', async () => {
    const first = startCli(['run', '--config', vault.configPath]);
    try {
      await first.ready();
      const second = await runCli(['run', '--config', vault.configPath]);
      assert.equal(second.code, 1);
      assert.match(second.stderr, /another vaultd \(pid \d+/);
    } finally {
      assert.equal(await first.stop(), 0);
    }
  });

  it('once drains the inbox and exits 0; status shows the folders and per-tool figures', async () => {
    await vault.drop('one.md', note('One', callBlock('search_web', { query: 5 })));
    await vault.drop('plain.md', '# nothing to run\n');
    const res = await runCli(['once', '--config', vault.configPath]);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.deepEqual(await vault.list('Failed'), ['one.md']);
    assert.deepEqual(await vault.list('Needs_Action'), ['plain.md']);
    const status = await runCli(['status', '--config', vault.configPath]);
    assert.equal(status.code, 0);
    assert.match(status.stdout, /Failed +1/);
    assert.match(status.stdout, /search_web +1 +0 +1/);
  });

  it('status labels a block with no readable tool name and names that are no tool, not as tools', async () => {
    const own = await makeVault();
    try {
      await own.drop(
        'mixed.md',
        note(
          'M',
          '```json\n{"tool_call": oops}\n```',
          callBlock('order_pizza', {}),
          callBlock('search_web', { query: 5 }),
        ),
      );
      const once = await runCli(['once', '--config', own.configPath, '--no-progress']);
      assert.equal(once.code, 0, once.stderr);
      const status = await runCli(['status', '--config', own.configPath]);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /calls per tool name in the execution log, last 7 day\(s\):/);
      assert.match(status.stdout, /^ {2}\(no tool name\) +1 +0 +1 /m);
      assert.match(status.stdout, /^ {2}order_pizza \(no such tool\) +1 +0 +1 /m);
      assert.match(status.stdout, /^ {2}search_web +1 +0 +1 /m);
      assert.doesNotMatch(status.stdout, /^ {2}unknown /m);
      const json = JSON.parse(
        (await runCli(['status', '--config', own.configPath, '--json'])).stdout,
      ) as { tools: Record<string, { calls: number; no_such_tool?: true }> };
      assert.deepEqual(Object.keys(json.tools).sort(), [
        '(no tool name)',
        'order_pizza',
        'search_web',
      ]);
      assert.equal(json.tools['order_pizza']?.no_such_tool, true);
      assert.equal(json.tools['search_web']?.no_such_tool, undefined);
    } finally {
      await own.cleanup();
    }
  });

  it('status refuses a --days that is not a whole number from 1 to 36500, exit 2', async () => {
    for (const days of ['abc', '0', '-3', '1.5', '36501']) {
      const res = await runCli(['status', '--config', vault.configPath, `--days=${days}`]);
      assert.equal(res.code, 2, `--days ${days}: ${res.stdout}`);
      assert.equal(res.stdout, '');
      assert.match(
        res.stderr,
        new RegExp(`'${days}' is invalid\\. expected a whole number of days from 1 to 36500`),
      );
    }
    const three = await runCli(['status', '--config', vault.configPath, '--days', '3']);
    assert.equal(three.code, 0, three.stderr);
    assert.match(three.stdout, /^calls per tool name in the execution log, last 3 day\(s\):$/m);
  });

  it('once moves a note whose file name is not UTF-8 to Failed/, unchanged, and says why', async () => {
    // Node.js lists such a name with replacement characters, a name no file has: the note sat in
    // the inbox, never run and never told why.
    const name = Buffer.from([0x62, 0x61, 0x64, 0xff, 0xfe, 0x2e, 0x6d, 0x64]); // bad\xff\xfe.md
    const body = Buffer.from(note('Bad', callBlock('search_web', { query: 'never' })));
    const inbox = Buffer.from(join(vault.root, 'Needs_Action/'));
    const failed = Buffer.from(join(vault.root, 'Failed/'));
    await writeFile(Buffer.concat([inbox, name]), body);
    // One of that name already in Failed/: the note takes the next number, never its place.
    await writeFile(Buffer.concat([failed, name]), 'earlier');
    const res = await runCli(['once', '--config', vault.configPath]);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout + res.stderr, /file name is not valid UTF-8.*moved to Failed/);
    const inInbox = await readdir(inbox, { encoding: 'buffer' });
    assert.equal(inInbox.filter((n) => n.includes(0xff)).length, 0);
    const numbered = Buffer.concat([name.subarray(0, 5), Buffer.from('-1.md')]);
    assert.deepEqual(await readFile(Buffer.concat([failed, numbered])), body);
    assert.equal(await readFile(Buffer.concat([failed, name]), 'utf8'), 'earlier');
  });

  it('once draws a progress bar on a terminal, and none when the output is not one', async (t) => {
    if (spawnSync('script', ['--version']).status !== 0) {
      t.skip('util-linux script(1) is not installed');
      return;
    }
    const dir = await mkdtemp(join(tmpdir(), 'vaultd-progress-'));
    try {
      await runCli(['init', dir]);
      for (let i = 0; i < 120; i++) {
        await writeFile(
          join(dir, 'Needs_Action', `n${i}.md`),
          note(`N${i}`, callBlock('search_web', { query: i })),
        );
      }
      // script(1) gives the command a pseudo-terminal, as a person at a shell has.
      const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} once --config ${JSON.stringify(join(dir, 'vaultd.yaml'))} > /dev/null`;
      const tty = spawnSync('script', ['-qec', command, '/dev/null'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(tty.status, 0, tty.stdout + tty.stderr);
      assert.match(tty.stdout, /\[#+\] 120\/120 notes/);
      assert.equal((await readdir(join(dir, 'Failed'))).length, 120);
      const piped = await runCli(['once', '--config', join(dir, 'vaultd.yaml')]);
      assert.doesNotMatch(piped.stderr, /notes/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('--vault DIR without --config', () => {
  let vault: TempVault;
  before(async () => {
    // The vault's own vaultd.yaml, as vaultd init writes it, with a deny rule and a pack on.
    vault = await makeVault(
      'policy:\n  deny: [send_notification]\ntools:\n  filesystem:\n    enabled: true\n',
    );
  });
  after(async () => {
    await vault.cleanup();
  });

  it("reads the vault's own vaultd.yaml, as check does, so its policy holds (docs walk)", async () => {
    // From another folder, so no ./vaultd.yaml is near.
    const cwd = tmpdir();
    const tools = await runCli(['tools', '--vault', vault.root], {}, { cwd });
    assert.equal(tools.code, 0, tools.stderr);
    assert.match(tools.stdout, /^ {2}read_file +safe/m);
    await vault.drop(
      'deny.md',
      note(
        'Deny',
        callBlock(
          'send_notification',
          { recipient: 'a@example.com', subject: 's', body: 'b', method: 'outbox' },
          'n',
        ),
      ),
    );
    const check = await runCli(['check', join(vault.root, 'Needs_Action', 'deny.md')], {}, { cwd });
    assert.match(check.stdout, /error PERMISSION_DENIED/);
    const once = await runCli(['once', '--vault', vault.root, '--no-progress'], {}, { cwd });
    assert.equal(once.code, 0, once.stdout + once.stderr);
    assert.deepEqual(await vault.list('Failed'), ['deny.md']);
    const text = await readFile(join(vault.root, 'Failed', 'deny.md'), 'utf8');
    assert.match(text, /"code": "PERMISSION_DENIED"/);
  });
});
