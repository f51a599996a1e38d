import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileHash } from '../../src/pipeline/preview.ts';
import { readText } from '../../src/tools/lsp/locations.ts';
import { hashRegularFile, readRegularFile, readUpTo } from '../../src/vault/read-regular.ts';
import { appendInVault } from '../../src/vault/vault-writer.ts';

// Each of these once opened a path an agent can name, or put a fifo at, with a plain open: on a
// fifo that waits for a writer while holding a thread of libuv's pool, the threads every note's
// reads, writes and moves go through. Each now answers at once; a regression hangs the test until
// its timeout fails it.
describe('reading what may be a fifo', { timeout: 20_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'vaultd-fifo-'));
  const fifo = join(dir, 'pipe.md');
  execFileSync('mkfifo', [fifo]);
  const file = join(dir, 'note.md');
  writeFileSync(file, 'hello\n');
  mkdirSync(join(dir, 'folder'));

  it('reads and hashes a regular file, and refuses a fifo, a folder and a file too large', async () => {
    assert.equal((await readRegularFile(file)).toString(), 'hello\n');
    assert.equal(await hashRegularFile(file), createHash('sha256').update('hello\n').digest('hex'));
    for (let i = 0; i < 6; i++) {
      await assert.rejects(readRegularFile(fifo), { code: 'ENOTREG' });
      await assert.rejects(hashRegularFile(fifo), { code: 'ENOTREG' });
    }
    await assert.rejects(readRegularFile(join(dir, 'folder')), { code: 'ENOTREG' });
    await assert.rejects(readRegularFile(file, 3), { code: 'EFBIG' });
  });

  it('hashes a large file in pieces to the same digest', async () => {
    const big = join(dir, 'big.bin');
    const bytes = Buffer.alloc(300_000, 7);
    bytes.write('end', bytes.length - 3);
    writeFileSync(big, bytes);
    assert.equal(await hashRegularFile(big), createHash('sha256').update(bytes).digest('hex'));
  });

  it("gives a preview's basis check, the LSP pack's reader and a note's append an answer at once", async () => {
    assert.equal(await fileHash(fifo), 'unreadable:ENOTREG');
    assert.equal(await fileHash(join(dir, 'gone.md')), null);
    assert.equal(await readText(fifo), undefined);
    assert.equal(await readText(file), 'hello\n');
    await assert.rejects(appendInVault(dir, fifo, 'x'), { code: 'ENXIO' });
  });

  it('never reads past the cap a file that grows while it is read', async () => {
    // FileHandle.readFile follows a file to its end whatever size stat gave: a command still
    // writing it (`yes > file`) made a capped copy_file or search read without end.
    const growing = join(dir, 'growing.txt');
    writeFileSync(growing, 'x'.repeat(100));
    const handle = await open(growing, 'r');
    try {
      const { size } = await handle.stat();
      appendFileSync(growing, 'y'.repeat(1_000_000));
      assert.equal(await readUpTo(handle, 1_000, size), null);
      assert.equal((await readUpTo(handle, 1_000_100, size))?.length, 1_000_100);
      assert.equal(await readUpTo(handle, 1_000_099, size), null);
      assert.equal((await readUpTo(handle, 5_000_000, 0))?.toString('latin1', 98, 102), 'xxyy');
    } finally {
      await handle.close();
    }
  });

  it('cleans up', () => {
    rmSync(dir, { recursive: true, force: true });
  });
});
