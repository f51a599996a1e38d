import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSdNotifier } from '../../src/observe/sd-notify.ts';
import { captureLogger, waitFor } from './helpers.ts';

// A fake systemd-notify, first on PATH: a real child process that records its socket and arguments.
const FAKE = `#!/bin/sh
printf '%s|%s\\n' "$NOTIFY_SOCKET" "$*" >> "$FAKE_NOTIFY_LOG"
exit "\${FAKE_NOTIFY_EXIT:-0}"
`;

let dir: string;
let fakeBin: string;
let counter = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vaultd-sd-notify-'));
  fakeBin = join(dir, 'bin');
  await mkdir(fakeBin);
  await writeFile(join(fakeBin, 'systemd-notify'), FAKE);
  await chmod(join(fakeBin, 'systemd-notify'), 0o755);
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A fresh log file and an environment that runs the fake. */
function setup(extra: Record<string, string> = {}): { log: string; env: NodeJS.ProcessEnv } {
  counter += 1;
  const log = join(dir, `calls-${counter}.log`);
  return {
    log,
    env: { PATH: `${fakeBin}:${process.env['PATH'] ?? ''}`, FAKE_NOTIFY_LOG: log, ...extra },
  };
}

async function calls(log: string): Promise<Array<{ socket: string; args: string }>> {
  if (!existsSync(log)) return [];
  const text = await readFile(log, 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [socket = '', args = ''] = line.split('|');
      return { socket, args };
    });
}

describe('sd-notify', () => {
  it('sends READY=1 with our pid and a status through systemd-notify', async () => {
    const { log, env } = setup({ NOTIFY_SOCKET: '/run/fake/notify' });
    const notifier = createSdNotifier({ env, pid: 4242 });
    assert.equal(notifier.enabled, true);
    assert.equal(await notifier.ready('watching 4 folders\nqueue 0'), true);
    assert.deepEqual(await calls(log), [
      {
        socket: '/run/fake/notify',
        args: '--ready --pid=4242 --status=watching 4 folders queue 0',
      },
    ]);
  });

  it('sends STOPPING=1 and status lines', async () => {
    const { log, env } = setup({ NOTIFY_SOCKET: '@abstract' });
    const notifier = createSdNotifier({ env });
    assert.equal(await notifier.status('draining 3 calls'), true);
    assert.equal(await notifier.stopping(), true);
    assert.deepEqual(
      (await calls(log)).map((c) => c.args),
      ['--status=draining 3 calls', 'STOPPING=1'],
    );
  });

  it('does nothing without NOTIFY_SOCKET', async () => {
    const { log, env } = setup({ WATCHDOG_USEC: '100000' });
    const notifier = createSdNotifier({ env });
    assert.equal(notifier.enabled, false);
    assert.equal(notifier.watchdogIntervalMs, undefined);
    assert.equal(await notifier.ready(), false);
    assert.equal(await notifier.stopping(), false);
    notifier.startWatchdog()();
    assert.deepEqual(await calls(log), []);
  });

  it('pings the watchdog at once and every half WATCHDOG_USEC until stopped', async () => {
    const { log, env } = setup({
      NOTIFY_SOCKET: '/run/fake/notify',
      WATCHDOG_USEC: '100000',
      WATCHDOG_PID: '4242',
    });
    const notifier = createSdNotifier({ env, pid: 4242 });
    assert.equal(notifier.watchdogIntervalMs, 50);
    const stop = notifier.startWatchdog();
    await waitFor(async () => (await calls(log)).length >= 3, 10_000, 'three watchdog pings');
    stop();
    const atStop = (await calls(log)).length;
    // Wait several intervals: at most the ping in flight when stop() ran may still land.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const all = await calls(log);
    assert.ok(all.length <= atStop + 1, `${all.length - atStop} pings after stop`);
    assert.ok(all.every((c) => c.args === 'WATCHDOG=1' && c.socket === '/run/fake/notify'));
  });

  it('leaves the watchdog alone when WATCHDOG_PID names another process', async () => {
    const { log, env } = setup({
      NOTIFY_SOCKET: '/run/fake/notify',
      WATCHDOG_USEC: '100000',
      WATCHDOG_PID: '1',
    });
    const notifier = createSdNotifier({ env, pid: 4242 });
    assert.equal(notifier.watchdogIntervalMs, undefined);
    const stop = notifier.startWatchdog();
    await new Promise((resolve) => setTimeout(resolve, 150));
    stop();
    assert.deepEqual(await calls(log), []);
  });

  it('ignores an invalid WATCHDOG_USEC with a warning', () => {
    const { logger, records } = captureLogger();
    const { env } = setup({ NOTIFY_SOCKET: '/run/fake/notify', WATCHDOG_USEC: 'soon' });
    assert.equal(createSdNotifier({ env, logger }).watchdogIntervalMs, undefined);
    assert.ok(records.some((r) => r['msg'] === 'ignoring invalid WATCHDOG_USEC'));
  });

  it('logs a failing systemd-notify and resolves false instead of throwing', async () => {
    const { logger, records } = captureLogger();
    const { log, env } = setup({ NOTIFY_SOCKET: '/run/fake/notify', FAKE_NOTIFY_EXIT: '1' });
    const notifier = createSdNotifier({ env, logger });
    assert.equal(await notifier.ready(), false);
    assert.equal((await calls(log)).length, 1);
    assert.ok(records.some((r) => r['msg'] === 'systemd-notify failed'));
  });

  it('logs a missing systemd-notify once and resolves false', async () => {
    const { logger, records } = captureLogger();
    const notifier = createSdNotifier({
      env: { PATH: dir, NOTIFY_SOCKET: '/run/fake/notify' },
      logger,
    });
    assert.equal(await notifier.ready(), false);
    assert.equal(await notifier.status('x'), false);
    assert.equal(records.filter((r) => /not found on PATH/.test(String(r['msg']))).length, 1);
  });

  it('takes the notify variables out of process.env so tools started later cannot notify', () => {
    const saved = { ...process.env };
    try {
      process.env['NOTIFY_SOCKET'] = '/run/fake/notify';
      process.env['WATCHDOG_USEC'] = '30000000';
      process.env['WATCHDOG_PID'] = String(process.pid);
      const notifier = createSdNotifier();
      assert.equal(notifier.enabled, true);
      assert.equal(notifier.watchdogIntervalMs, 15_000);
      for (const name of ['NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID'])
        assert.equal(process.env[name], undefined, name);
    } finally {
      for (const name of ['NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID']) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });

  it('notifies from a real daemon process through the module functions', async () => {
    const { log, env } = setup({ NOTIFY_SOCKET: '/run/fake/notify', WATCHDOG_USEC: '100000' });
    const module = new URL('../../src/observe/sd-notify.ts', import.meta.url).href;
    const script = `
      const sd = await import(${JSON.stringify(module)});
      sd.initSdNotify();
      if (process.env.NOTIFY_SOCKET !== undefined) throw new Error('socket still in env');
      const stop = sd.startWatchdog();
      await sd.notifyReady('ready');
      await sd.notifyStatus('working');
      const { readFileSync, existsSync } = await import('node:fs');
      const pings = () => existsSync(process.env.FAKE_NOTIFY_LOG)
        ? readFileSync(process.env.FAKE_NOTIFY_LOG, 'utf8').split('WATCHDOG=1').length - 1 : 0;
      const deadline = Date.now() + 10000;
      while (pings() < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      stop();
      await sd.notifyStopping();
    `;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, stderr);
    const args = (await calls(log)).map((c) => c.args);
    assert.ok(args.includes(`--ready --pid=${child.pid} --status=ready`), args.join('\n'));
    assert.ok(args.includes('--status=working'));
    assert.equal(args.at(-1), 'STOPPING=1');
    assert.ok(args.filter((a) => a === 'WATCHDOG=1').length >= 2, args.join('\n'));
  });
});
