import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  BIN,
  callBlock,
  makeVault,
  note,
  runCli,
  startCli,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';

const ERASE_LINE = '\u001b[K';

/** A TCP port held by this test process, as another program would hold it. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { port: address.port, server };
}

/** A pid that no process has now: one of a child that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

describe('operator paths of run, once and status', () => {
  let vault: TempVault;
  let held: { port: number; server: Server };
  let daemon: DaemonProcess | undefined;
  before(async () => {
    held = await holdPort();
  });
  afterEach(async () => {
    await daemon?.stop();
    daemon = undefined;
    await vault.cleanup();
  });
  after(async () => {
    await new Promise((resolve) => held.server.close(resolve));
  });

  it('once opens no HTTP port: it succeeds while the configured port is taken', async () => {
    vault = await makeVault(`http:\n  port: ${held.port}\n`);
    await vault.drop('a.md', note('A', callBlock('search_web', { query: 7 })));
    const res = await runCli(['once', '--config', vault.configPath]);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.deepEqual(await vault.list('Failed'), ['a.md']);
    assert.doesNotMatch(res.stdout, /HTTP listener/);
  });

  it('run with its HTTP port taken exits 1 with one line and leaves nothing running', async () => {
    vault = await makeVault(`http:\n  port: ${held.port}\n`);
    daemon = startCli(['run', '--config', vault.configPath]);
    // Before the fix the watcher and workers started before the listener kept the process alive.
    let code: number | string | undefined;
    void daemon.exited.then((c) => (code = c));
    await waitFor(() => code !== undefined, { timeoutMs: 20_000, message: 'vaultd run exited' });
    assert.equal(code, 1, daemon.output());
    // The config logs at debug level, where the whole error is logged too: the rest is one line.
    const lines = daemon
      .output()
      .trimEnd()
      .split('\n')
      .filter((l) => !l.startsWith('{"level":'));
    assert.equal(lines.length, 1, daemon.output());
    assert.match(lines[0]!, new RegExp(`^vaultd: cannot listen on 127\\.0\\.0\\.1:${held.port}: `));
    assert.match(lines[0]!, /EADDRINUSE/);
    // The lock was released: a daemon without the port starts on the same vault.
    assert.equal(existsSync(join(vault.root, '.vaultd', 'lock')), false);
  });

  it('a second daemon on the vault says so in one line, no JSON, exit 1', async () => {
    vault = await makeVault();
    const config = await readFile(vault.configPath, 'utf8');
    await writeFile(vault.configPath, config.replace('level: debug', 'level: info'));
    daemon = startCli(['run', '--config', vault.configPath]);
    await daemon.ready();
    const second = await runCli(['run', '--config', vault.configPath]);
    assert.equal(second.code, 1);
    assert.equal(second.stdout, '');
    assert.equal(second.stderr.trimEnd().split('\n').length, 1, second.stderr);
    assert.match(second.stderr, /^vaultd: another vaultd \(pid \d+/);
    assert.doesNotMatch(second.stderr, /[{}]|\n\s+at /);
  });

  it('status says whether a daemon runs: not running, running, stale lock, lock on another host', async () => {
    vault = await makeVault();
    const state = async (): Promise<{ text: string; json: { state: string; pid?: number } }> => {
      const text = await runCli(['status', '--config', vault.configPath]);
      const json = await runCli(['status', '--config', vault.configPath, '--json']);
      assert.equal(text.code, 0, text.stderr);
      return { text: text.stdout, json: JSON.parse(json.stdout).daemon };
    };
    let s = await state();
    assert.match(s.text, /^daemon: not running$/m);
    assert.equal(s.json.state, 'not_running');

    daemon = startCli(['run', '--config', vault.configPath]);
    await daemon.ready();
    s = await state();
    assert.match(s.text, new RegExp(`^daemon: running \\(pid ${daemon.child.pid},`, 'm'));
    assert.equal(s.json.state, 'running');
    assert.equal(await daemon.stop(), 0);
    daemon = undefined;

    const lock = join(vault.root, '.vaultd', 'lock');
    await mkdir(join(vault.root, '.vaultd'), { recursive: true });
    const pid = deadPid();
    await writeFile(lock, JSON.stringify({ pid, hostname: hostname(), started_at: 'then' }));
    s = await state();
    assert.match(s.text, new RegExp(`^daemon: not running \\(stale lock of pid ${pid}`, 'm'));
    assert.equal(s.json.state, 'stale_lock');

    await writeFile(
      lock,
      JSON.stringify({ pid: 4242, hostname: 'elsewhere.example', started_at: 'then' }),
    );
    s = await state();
    assert.match(s.text, /^daemon: lock held by pid 4242 on host elsewhere\.example/m);
    assert.equal(s.json.state, 'other_host');
  });

  it('a bad policy rule stops the start with exit 2, quoting the rule and its place', async () => {
    vault = await makeVault(
      `policy:\n  allow: [search_web]\n  deny: ['send_notification(recipient)', 'Bad-Name']\n`,
    );
    for (const command of ['run', 'once', 'status']) {
      const res = await runCli([command, '--config', vault.configPath]);
      assert.equal(res.code, 2, `${command}: ${res.stderr}`);
      assert.equal(res.stdout, '');
      assert.match(res.stderr, /policy\.deny\[0\] "send_notification\(recipient\)": /);
      assert.match(res.stderr, /policy\.deny\[1\] "Bad-Name": /);
      assert.doesNotMatch(res.stderr, /\n\s+at /, 'no stack');
    }
  });

  it('once on a terminal writes its log lines above the progress bar, never into its line', async (t) => {
    if (spawnSync('script', ['--version']).status !== 0) {
      t.skip('util-linux script(1) is not installed');
      return;
    }
    vault = await makeVault();
    for (let i = 0; i < 60; i++) {
      await vault.drop(`n${i}.md`, note(`N${i}`, callBlock('search_web', { query: i })));
    }
    // stdout and stderr on one pseudo-terminal, as at a shell.
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} once --config ${JSON.stringify(vault.configPath)}`;
    const tty = spawnSync('script', ['-qec', command, '/dev/null'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(tty.status, 0, tty.stdout + tty.stderr);
    assert.match(tty.stdout, /\[#+\] 60\/60 notes/);
    let logLines = 0;
    for (const raw of tty.stdout.split('\n')) {
      const line = raw.replace(/\r$/, '');
      if (!line.includes('{"level"')) continue;
      logLines++;
      // What the terminal shows of the line: the text after its last carriage return, with the
      // erase-line sequence applied.
      const shown = line.split('\r').pop() ?? '';
      const visible = shown.startsWith(ERASE_LINE) ? shown.slice(ERASE_LINE.length) : shown;
      assert.doesNotThrow(() => JSON.parse(visible), `a log line shares its line: ${visible}`);
    }
    assert.ok(logLines > 60, `every note logs at debug level (${logLines} log lines)`);
    assert.equal((await readFile(vault.configPath, 'utf8')).includes('level: debug'), true);
  });
});
