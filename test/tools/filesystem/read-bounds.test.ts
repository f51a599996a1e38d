/* eslint-disable @typescript-eslint/no-explicit-any -- results carry JSON data of many shapes */
// read_file of a file of one very long line (the attack replayed: 8 KiB of text, then a sparse
// 1 GiB of NUL bytes, which pass the text check on the first 8 KiB; minified one-line JSON is the
// same shape). The unfinished line used to be kept whole and split again at every 64 KiB chunk, on
// the main thread, whatever the cap, and the call's signal was never looked at: 96 MiB took 78 s and
// 600 MiB, and the read went on after the call's timeout. What is measured here is the work done,
// the bytes the process read (`rchar` of /proc/self/io), never a time: a read that goes past its
// bound has its file emptied under it, so that it ends and the test fails instead of hanging.
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, openSync, readFileSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { readFile } from '../../../src/tools/filesystem/read-file.ts';
import { makeContext } from '../context.ts';
import { makeSandbox, refused, type FsSandbox } from './helpers.ts';

const MiB = 1024 * 1024;
/** What read_file reads at most past the part it returns, and in all (docs/tools/filesystem.md). */
const COUNT_SCAN = 64 * MiB;
const MAX_SCAN = 256 * MiB;
/** The cap on text returned (the default max_read_bytes), two chunks, the 8 KiB sniffed, and the watchdog's own reads. */
const SLACK = 256 * 1024 + 2 * 64 * 1024 + 8192 + 64 * 1024;

/** Bytes this process has read through system calls, all threads (libuv's pool reads files). */
function bytesRead(): number {
  const match = /^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'));
  if (match === null) throw new Error('no rchar in /proc/self/io');
  return Number(match[1]);
}

/** Make a sparse file of `size` bytes: `head` at its start, a line end at each of `lineEnds`. */
function sparse(path: string, size: number, head: string, lineEnds: readonly number[] = []): void {
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, head, 0);
    for (const at of lineEnds) writeSync(fd, '\n', at);
    ftruncateSync(fd, size);
  } finally {
    closeSync(fd);
  }
}

/**
 * Run a call, emptying `file` as soon as the process has read more than `limit` bytes since the
 * start (a read that would go on for minutes then ends at its next chunk).
 * @returns the outcome, the bytes read, and whether the limit was passed.
 */
async function watched(
  file: string,
  limit: number,
  run: () => Promise<unknown>,
): Promise<{ outcome: unknown; read: number; over: boolean }> {
  const start = bytesRead();
  let over = false;
  const watchdog = setInterval(() => {
    if (!over && bytesRead() - start > limit) {
      over = true;
      truncateSync(file, 0);
    }
  }, 5);
  let outcome: unknown;
  try {
    outcome = await run();
  } catch (error) {
    outcome = error;
  } finally {
    clearInterval(watchdog);
  }
  return { outcome, read: bytesRead() - start, over };
}

describe('read_file of a file of 1 GiB, one line or lines of 1 MiB', () => {
  let box: FsSandbox;
  let oneLine: string;
  let longLines: string;
  before(async () => {
    box = await makeSandbox();
    oneLine = join(box.vault, 'Notes', 'one-line.json');
    longLines = join(box.vault, 'Notes', 'long-lines.txt');
    // The first call loads what calls load lazily (half a MiB of modules read): out of the counts.
    await box.call(readFile, { path: 'Dashboard.md' });
  });
  beforeEach(() => {
    // Sparse: no disk used. Made again for each test, since a watchdog may have emptied them.
    sparse(oneLine, 1024 * MiB, 'a'.repeat(8192));
    sparse(
      longLines,
      1024 * MiB,
      'b'.repeat(8192),
      Array.from({ length: 1024 }, (_, i) => (i + 1) * MiB - 1),
    );
  });
  after(() => box.cleanup());

  it('returns a line longer than the cap as truncated, having read at most 64 MiB past it (the attack replayed)', async () => {
    const { outcome, read, over } = await watched(oneLine, COUNT_SCAN + SLACK, () =>
      box.call(readFile, { path: 'Notes/one-line.json' }),
    );
    assert.equal(over, false, `read ${read} bytes of a 1 GiB line, past the bound`);
    assert.ok(!(outcome instanceof Error), String(outcome));
    const { content, data } = outcome as { content: string; data: any };
    assert.equal(data.truncated, true);
    assert.equal(data.end_line, null);
    assert.equal(data.total_lines, null);
    assert.equal(data.size, 1024 * MiB);
    assert.match(content, /^\n\[… line 1 alone is longer than 262144 bytes/);
    assert.ok(read <= COUNT_SCAN + SLACK, `${read} bytes read`);
  });

  it('reads no more than 256 MiB to reach start_line, and says where it stopped', async () => {
    const { outcome, read, over } = await watched(longLines, MAX_SCAN + SLACK, () =>
      box.call(readFile, { path: 'Notes/long-lines.txt', start_line: 1000 }),
    );
    assert.equal(over, false, `read ${read} bytes to reach line 1000, past the bound`);
    assert.ok(!(outcome instanceof Error), String(outcome));
    const { content, data } = outcome as { content: string; data: any };
    assert.equal(data.truncated, true);
    assert.equal(data.end_line, null);
    assert.match(content, /line 1000 is not within the first 256 MiB of Notes\/long-lines\.txt/);
    // Lines within the bound are still read, each line of 1 MiB past the cap said to be so.
    const near = await box.call(readFile, { path: 'Notes/long-lines.txt', start_line: 200 });
    assert.match(near.content, /line 200 alone is longer than 262144 bytes/);
  });

  it('stops reading when the call is aborted (its timeout), instead of reading on', async () => {
    const { ctx, controller } = makeContext({}, box.vault);
    controller.abort();
    const { outcome, read, over } = await watched(oneLine, MiB, () =>
      Promise.resolve(
        readFile.handler({ path: 'Notes/one-line.json' }, { ...ctx, files: box.access }),
      ),
    );
    assert.equal(over, false, `read ${read} bytes after the call was aborted`);
    assert.ok(outcome instanceof Error, 'the aborted call read on and returned');
    await refused(Promise.reject(outcome), 'EXECUTION_FAILED', /the call was stopped/);
  });
});
