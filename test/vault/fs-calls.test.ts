// The note path's file calls: the synchronous fast path (a note on its own) and the thread pool's
// path (under load) give the same results and errors, the fast path is taken only while nothing
// is out in the pool, and a slow synchronous call turns it off.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type * as NodeFs from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  configureFastPath,
  fastPathOpen,
  lstat,
  noteSyncCall,
  onFastPathPause,
  readFileNoFollow,
  realpath,
  rename,
  writeNewFile,
} from '../../src/vault/fs-calls.ts';
import { waitFor } from '../helpers/wait-for.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vaultd-fs-calls-'));
});
after(async () => {
  configureFastPath();
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => configureFastPath());

const openFds = (): number => readdirSync('/proc/self/fd').length;

/** A new turn of the event loop: the fast path's share of the main thread starts again. */
const newTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
// Tests that are not about the main thread's slice: a busy machine that stops this process for
// 4 ms between two lines would otherwise send the call under test to the pool.
const UNSLICED = { sliceLimitMs: Number.POSITIVE_INFINITY };

/** What a call gave: its value, or its error's code and syscall. */
async function outcome<T>(call: () => Promise<T>): Promise<unknown> {
  try {
    return { value: await call() };
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    return { code: e.code, syscall: e.syscall };
  }
}

for (const mode of ['fast path', 'thread pool'] as const) {
  describe(`file calls, ${mode}`, () => {
    let here: string;
    before(() => {
      here = join(dir, mode.replace(' ', '-'));
      mkdirSync(here);
      writeFileSync(join(here, 'note.md'), 'hello\n');
      writeFileSync(join(here, 'big.md'), 'x'.repeat(100 * 1024));
      symlinkSync(join(here, 'note.md'), join(here, 'link.md'));
      writeFileSync(join(here, 'linked.md'), 'two names');
      linkSync(join(here, 'linked.md'), join(here, 'second-name.md'));
      execFileSync('mkfifo', [join(here, 'fifo.md')]);
      mkdirSync(join(here, 'folder.md'));
    });
    const setUp = (): void => configureFastPath({ ...UNSLICED, allowed: mode === 'fast path' });

    it('reads a note, a note past the cap, and a large note in full', async () => {
      setUp();
      const fds = openFds();
      const small = await readFileNoFollow(join(here, 'note.md'), 1000);
      assert.equal(small.bytes?.toString(), 'hello\n');
      assert.equal(small.fd, undefined);
      const capped = await readFileNoFollow(join(here, 'note.md'), 3);
      assert.equal(capped.bytes?.toString(), 'hell', 'the cap and one byte more');
      const big = await readFileNoFollow(join(here, 'big.md'), 1024 * 1024);
      assert.equal(big.bytes?.length, 100 * 1024);
      assert.ok(openFds() <= fds, 'every file closed');
    });

    it('reads nothing of a link, a fifo, a folder or a file with two names, and closes them', async () => {
      setUp();
      const fds = openFds();
      assert.deepEqual(await outcome(() => readFileNoFollow(join(here, 'link.md'), 100)), {
        code: 'ELOOP',
        syscall: 'open',
      });
      assert.deepEqual(await outcome(() => readFileNoFollow(join(here, 'gone.md'), 100)), {
        code: 'ENOENT',
        syscall: 'open',
      });
      for (const name of ['fifo.md', 'folder.md', 'linked.md']) {
        const read = await readFileNoFollow(join(here, name), 100);
        assert.equal(read.bytes, null, name);
      }
      assert.ok(openFds() <= fds, 'every file closed');
    });

    it('hands the file over open when asked', async () => {
      setUp();
      const read = await readFileNoFollow(join(here, 'note.md'), 100, true);
      assert.equal(read.bytes?.toString(), 'hello\n');
      assert.ok(read.fd !== undefined);
      const again = Buffer.alloc(5);
      readSync(read.fd, again, 0, 5, 0);
      assert.equal(again.toString(), 'hello');
      closeSync(read.fd);
    });

    it('writes a new file with its mode, never over another, and leaves nothing open', async () => {
      setUp();
      const fds = openFds();
      const file = join(here, 'written.md');
      await writeNewFile(file, Buffer.from('results\n'), { mode: 0o640, chmod: true });
      assert.equal(readFileSync(file, 'utf8'), 'results\n');
      assert.equal(statSync(file).mode & 0o777, 0o640);
      await assert.rejects(
        writeNewFile(file, Buffer.from('again'), { mode: 0o644, chmod: false }),
        { code: 'EEXIST', syscall: 'open' },
      );
      assert.equal(readFileSync(file, 'utf8'), 'results\n', 'the file that was there is kept');
      const large = join(here, 'large.md');
      await writeNewFile(large, Buffer.alloc(200 * 1024, 120), { mode: 0o644, chmod: false });
      assert.equal(statSync(large).size, 200 * 1024);
      // The close goes out after the fsync, without being waited for.
      // At most as many as before: a close another test left going may end meanwhile.
      await waitFor(() => openFds() <= fds, { message: 'every file closed' });
    });

    it('lstat, realpath and rename answer as fs/promises does', async () => {
      setUp();
      assert.equal((await lstat(join(here, 'link.md'))).isSymbolicLink(), true);
      assert.equal(await realpath(join(here, 'link.md')), join(here, 'note.md'));
      assert.deepEqual(await outcome(() => lstat(join(here, 'gone.md'))), {
        code: 'ENOENT',
        syscall: 'lstat',
      });
      assert.deepEqual(await outcome(() => rename(join(here, 'gone.md'), join(here, 'x.md'))), {
        code: 'ENOENT',
        syscall: 'rename',
      });
      writeFileSync(join(here, 'move-me.md'), 'm');
      await rename(join(here, 'move-me.md'), join(here, 'moved.md'));
      assert.equal(existsSync(join(here, 'moved.md')), true);
    });
  });
}

// Faults a disk or a network file system can give, injected into node:fs itself (the module's
// named imports follow syncBuiltinESMExports), on both paths.
const fs = createRequire(import.meta.url)('node:fs') as typeof NodeFs;

/** Replace some of node:fs's functions for the length of `run`, then put them back. */
async function withFs(
  replaced: Partial<Record<'closeSync' | 'close' | 'readSync' | 'read' | 'fstatSync', unknown>>,
  run: () => Promise<void>,
): Promise<void> {
  const saved = new Map(Object.keys(replaced).map((k) => [k, (fs as never)[k] as unknown]));
  Object.assign(fs, replaced);
  syncBuiltinESMExports();
  try {
    await run();
  } finally {
    Object.assign(fs, Object.fromEntries(saved));
    syncBuiltinESMExports();
  }
}

const eio = (syscall: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`EIO: i/o error, ${syscall}`), { code: 'EIO', errno: -5, syscall });

describe('faults of the disk, on both paths', () => {
  const realCloseSync = fs.closeSync;
  const realClose = fs.close;
  const failingClose = {
    closeSync: (fd: number): void => {
      realCloseSync(fd);
      throw eio('close');
    },
    close: (fd: number, done: (error: Error | null) => void): void =>
      realClose(fd, () => done(eio('close'))),
  };

  for (const mode of ['fast path', 'thread pool'] as const) {
    const setUp = (): void => configureFastPath({ ...UNSLICED, allowed: mode === 'fast path' });

    it(`${mode}: a failed close fails a good read, as a rejected promise`, async () => {
      setUp();
      writeFileSync(join(dir, 'close-fails.md'), 'hello');
      mkdirSync(join(dir, 'close-fails-folder.md'), { recursive: true });
      await withFs(failingClose, async () => {
        for (const name of ['close-fails.md', 'close-fails-folder.md']) {
          let promise: Promise<unknown> | undefined;
          assert.doesNotThrow(() => {
            promise = readFileNoFollow(join(dir, name), 100);
          }, `${name}: no synchronous throw`);
          assert.deepEqual(await outcome(() => promise as Promise<unknown>), {
            code: 'EIO',
            syscall: 'close',
          });
        }
      });
    });

    it(`${mode}: a failed read wins over a failed close after it, and nothing goes unhandled`, async () => {
      setUp();
      writeFileSync(join(dir, 'read-fails.md'), 'hello');
      const unhandled: unknown[] = [];
      const listen = (reason: unknown): void => void unhandled.push(reason);
      process.on('unhandledRejection', listen);
      try {
        await withFs(
          {
            ...failingClose,
            readSync: () => {
              throw eio('read');
            },
            read: (...args: unknown[]) => (args.at(-1) as (e: Error) => void)(eio('read')),
          },
          async () => {
            assert.deepEqual(
              await outcome(() => readFileNoFollow(join(dir, 'read-fails.md'), 100)),
              {
                code: 'EIO',
                syscall: 'read',
              },
            );
          },
        );
        await new Promise((resolve) => setTimeout(resolve, 20));
        assert.deepEqual(unhandled, []);
      } finally {
        process.off('unhandledRejection', listen);
      }
    });
  }

  it('a call refused before it reached the pool leaves nothing counted as out', async () => {
    configureFastPath({ allowed: false });
    for (const call of [
      () => lstat(join(dir, 'a\0b')),
      () => rename(join(dir, 'a\0b'), join(dir, 'c')),
      () => realpath(join(dir, 'a\0b')),
    ]) {
      await assert.rejects(call(), { code: 'ERR_INVALID_ARG_VALUE' });
    }
    configureFastPath(UNSLICED);
    await newTurn();
    assert.equal(fastPathOpen(), true, 'the fast path is open again');
  });

  it('a note that grew past 64 KiB while read synchronously is read to its end through the pool', async () => {
    configureFastPath(UNSLICED);
    const text = 'y'.repeat(1024 * 1024);
    writeFileSync(join(dir, 'grows.md'), text);
    // The fstat saw the note when it was small; the appends came before the read.
    const realFstatSync = fs.fstatSync;
    const realReadSync = fs.readSync;
    let readOnMainThread = 0;
    await withFs(
      {
        fstatSync: (fd: number) => Object.assign(realFstatSync(fd), { size: 100 }),
        readSync: (...args: Parameters<typeof readSync>) => {
          const bytes = realReadSync(...args);
          readOnMainThread += bytes;
          return bytes;
        },
      },
      async () => {
        const before = openFds();
        const read = await readFileNoFollow(join(dir, 'grows.md'), 2 * 1024 * 1024);
        assert.equal(read.bytes?.toString(), text, 'the whole note');
        assert.ok(readOnMainThread <= 128 * 1024, `${readOnMainThread} bytes read synchronously`);
        assert.ok(openFds() <= before, 'no descriptor left open');
      },
    );
  });
});

describe('the fast path is taken only when nothing is out in the pool', () => {
  it('runs a call synchronously on its own', async () => {
    configureFastPath(UNSLICED);
    await newTurn();
    assert.equal(fastPathOpen(), true);
    writeFileSync(join(dir, 'a.md'), 'a');
    const moved = rename(join(dir, 'a.md'), join(dir, 'b.md'));
    assert.equal(existsSync(join(dir, 'b.md')), true, 'renamed before the promise settled');
    await moved;
  });

  it('sends every call to the pool while a write is out there, and comes back after', async () => {
    configureFastPath(UNSLICED);
    const writing = writeNewFile(join(dir, 'new.md'), Buffer.from('data'), {
      mode: 0o644,
      chmod: false,
    });
    assert.equal(fastPathOpen(), false, 'a write is out in the pool');
    const looked = lstat(dir);
    await Promise.all([writing, looked]);
    await newTurn();
    assert.equal(fastPathOpen(), true, 'nothing out any more');
  });

  it('counts a pool call that failed as back', async () => {
    configureFastPath({ allowed: false });
    await assert.rejects(lstat(join(dir, 'nothing-here')), { code: 'ENOENT' });
    await assert.rejects(readFileNoFollow(join(dir, 'nothing-here'), 10), { code: 'ENOENT' });
    configureFastPath(UNSLICED);
    await newTurn();
    assert.equal(fastPathOpen(), true);
  });

  it('pauses when synchronous calls are slow on average, not for a few slow ones', async () => {
    configureFastPath(UNSLICED);
    for (let i = 0; i < 200; i++) noteSyncCall(0.03);
    for (let i = 0; i < 4; i++) noteSyncCall(5);
    await newTurn();
    assert.equal(fastPathOpen(), true, 'four calls of 5 ms among fast ones are noise');
    for (let i = 0; i < 100; i++) noteSyncCall(0.03);
    await newTurn();
    assert.equal(fastPathOpen(), true);
    for (let i = 0; i < 20; i++) noteSyncCall(2);
    assert.equal(fastPathOpen(), false, 'calls of 2 ms one after another turn it off');
    configureFastPath(UNSLICED);
    await newTurn();
    assert.equal(fastPathOpen(), true);
  });

  it('tells its listeners of a pause, once each, until they stop listening', () => {
    configureFastPath();
    const told: number[] = [];
    const stop = onFastPathPause((pause) => told.push(pause.averageMs));
    for (let i = 0; i < 10; i++) noteSyncCall(3);
    assert.equal(told.length, 1);
    assert.ok((told[0] ?? 0) > 1, 'the average that crossed the limit');
    stop();
    configureFastPath();
    for (let i = 0; i < 10; i++) noteSyncCall(3);
    assert.equal(told.length, 1, 'not told after it stopped listening');
    configureFastPath();
  });

  it('counts the calls it makes synchronously', async () => {
    configureFastPath({ ...UNSLICED, averageLimitMs: -1 });
    await newTurn();
    assert.equal(fastPathOpen(), true);
    await lstat(dir);
    assert.equal(fastPathOpen(), false, 'any duration is over a limit below zero');
  });

  it('lets the event loop turn: no synchronous calls past half a slice of the main thread', async () => {
    configureFastPath();
    await newTurn();
    assert.equal(fastPathOpen(), true, 'a new turn of the loop');
    const start = performance.now();
    while (performance.now() - start < 5); // the main thread busy, as with a chain of notes
    assert.equal(fastPathOpen(), false, 'the next call goes through the pool, and the loop turns');
    await newTurn();
    assert.equal(fastPathOpen(), true, 'open again once the loop has turned');
  });

  it('can be turned off', () => {
    configureFastPath({ allowed: false });
    assert.equal(fastPathOpen(), false);
  });
});
