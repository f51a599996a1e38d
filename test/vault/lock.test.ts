import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { acquireLock, LockError, readLock, type VaultLock } from '../../src/vault/index.ts';

const LOCK_MODULE = new URL('../../src/vault/lock.ts', import.meta.url).href;

let stateDir: string;
const children: ChildProcess[] = [];
const locks: VaultLock[] = [];
beforeEach(async () => {
  stateDir = join(await mkdtemp(join(tmpdir(), 'vaultd-lock-')), '.vaultd');
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const lock of locks.splice(0)) await lock.release();
  await rm(join(stateDir, '..'), { recursive: true, force: true });
});

/**
 * A child process that waits for a line on stdin (so several can start at the same moment), tries
 * to take the lock, prints `won` or `lost`, and holds the lock until killed.
 */
async function spawnLocker(): Promise<{ child: ChildProcess; go(): Promise<string> }> {
  const script = `
    const { acquireLock } = await import(${JSON.stringify(LOCK_MODULE)});
    const { once } = await import('node:events');
    console.log('ready');
    await once(process.stdin, 'data');
    try { await acquireLock(${JSON.stringify(stateDir)}); console.log('won'); }
    catch (error) { console.log(error.name === 'LockError' ? 'lost' : 'error ' + error.message); }
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[
    Symbol.asyncIterator
  ]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    return line.done === true ? 'exited' : String(line.value);
  };
  assert.equal(await next(), 'ready');
  return {
    child,
    go() {
      child.stdin?.write('go\n');
      return next();
    },
  };
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  assert.ok(child.pid !== undefined);
  return child.pid;
}

describe('acquireLock', () => {
  it('creates the lock with pid, host and start time, and removes it on release', async () => {
    const lock = await acquireLock(stateDir);
    const content = JSON.parse(await readFile(join(stateDir, 'lock'), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.equal(content['pid'], process.pid);
    assert.equal(content['hostname'], hostname());
    assert.ok(!Number.isNaN(Date.parse(content['started_at'] as string)));
    assert.deepEqual((await readLock(stateDir))?.alive, true);
    await lock.release();
    await lock.release();
    assert.deepEqual(await readdir(stateDir), []);
    locks.push(await acquireLock(stateDir));
  });

  it('refuses a second acquire in the same process', async () => {
    locks.push(await acquireLock(stateDir));
    await assert.rejects(acquireLock(stateDir), LockError);
  });

  it('refuses while another live process holds the lock, with a message saying what to do', async () => {
    const { child, go } = await spawnLocker();
    assert.equal(await go(), 'won');
    await assert.rejects(acquireLock(stateDir), (error: unknown) => {
      assert.ok(error instanceof LockError);
      assert.equal(error.holder?.pid, child.pid);
      assert.match(
        error.message,
        new RegExp(
          `^another vaultd \\(pid ${child.pid}, started \\d{4}-\\d\\d-\\d\\dT[^)]+\\) is running on this vault; stop it first or remove .*lock if it is stale$`,
        ),
      );
      return true;
    });
    child.kill('SIGKILL');
    await once(child, 'exit');
    // The holder died without releasing: its lock is now stale and is taken over.
    locks.push(await acquireLock(stateDir));
    assert.equal((await readLock(stateDir))?.info.pid, process.pid);
  });

  it('takes over a stale lock whose process is gone', async () => {
    const pid = await deadPid();
    const stale = {
      pid,
      hostname: hostname(),
      started_at: '2020-01-01T00:00:00.000Z',
      token: 'old',
    };
    await writeFile(join(await mkdirp(stateDir), 'lock'), JSON.stringify(stale));
    const lock = await acquireLock(stateDir);
    locks.push(lock);
    const content = JSON.parse(await readFile(join(stateDir, 'lock'), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.equal(content['pid'], process.pid);
    assert.equal(content['token'], lock.info.token);
    assert.deepEqual((await readdir(stateDir)).sort(), ['lock']);
  });

  it('takes over a stale lock past a takeover marker left empty or holding a live pid (crash campaign finding)', async () => {
    // A kill between the marker's creation and its pid being written left it empty, and every
    // later start gave up: "other processes keep competing for it".
    const { createHash } = await import('node:crypto');
    for (const leftover of ['', String(process.pid)]) {
      const text = JSON.stringify({
        pid: await deadPid(),
        hostname: hostname(),
        started_at: '2020-01-01T00:00:00.000Z',
        token: `old-${leftover.length}`,
      });
      await writeFile(join(await mkdirp(stateDir), 'lock'), text);
      const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
      const marker = join(stateDir, `lock.takeover-${digest}`);
      await writeFile(marker, leftover);
      const old = new Date(Date.now() - 60_000);
      await utimes(marker, old, old);
      const lock = await acquireLock(stateDir);
      assert.equal(lock.info.pid, process.pid);
      assert.deepEqual((await readdir(stateDir)).sort(), ['lock']);
      await lock.release();
    }
  });

  it('of several processes taking over the same stale lock, exactly one wins', async () => {
    const pid = await deadPid();
    const stale = {
      pid,
      hostname: hostname(),
      started_at: '2020-01-01T00:00:00.000Z',
      token: 'old',
    };
    await writeFile(join(await mkdirp(stateDir), 'lock'), JSON.stringify(stale));
    const lockers = await Promise.all(Array.from({ length: 3 }, () => spawnLocker()));
    const outcomes = await Promise.all(lockers.map((l) => l.go()));
    assert.deepEqual(outcomes.toSorted(), ['lost', 'lost', 'won']);
    const winner = lockers[outcomes.indexOf('won')]?.child.pid;
    assert.equal((await readLock(stateDir))?.info.pid, winner);
  });

  it('refuses a lock held on another host, since that process cannot be checked', async () => {
    const other = { pid: 1, hostname: `not-${hostname()}`, started_at: '2020-01-01T00:00:00.000Z' };
    await writeFile(join(await mkdirp(stateDir), 'lock'), JSON.stringify(other));
    await assert.rejects(acquireLock(stateDir), /on host not-/);
  });

  it('treats an old unreadable lock file as stale', async () => {
    const path = join(await mkdirp(stateDir), 'lock');
    await writeFile(path, '{"pid": 12');
    const old = new Date(Date.now() - 60_000);
    await utimes(path, old, old);
    locks.push(await acquireLock(stateDir));
    assert.equal((await readLock(stateDir))?.info.pid, process.pid);
  });
});

async function mkdirp(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  return dir;
}
