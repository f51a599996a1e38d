import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { VaultIoError, writeFileAtomic } from '../../src/vault/index.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vaultd-atomic-'));
});
afterEach(async () => {
  await chmod(dir, 0o755).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

describe('writeFileAtomic', () => {
  it('writes under another temp name when its own is taken (review finding)', async () => {
    // Left by an earlier process with this pid, or planted by an agent that guessed the names:
    // the write failed with EEXIST and a note that had succeeded went to Failed/.
    const path = join(dir, 'note.md');
    await writeFile(path, 'old');
    const planted: string[] = [];
    for (let n = 0; n < 2000; n += 1) {
      const name = `.note.md.vaultd-${process.pid}-${n.toString(36)}.tmp`;
      await writeFile(join(dir, name), 'planted');
      planted.push(name);
    }
    await writeFileAtomic(path, 'new', { fsyncDir: false });
    assert.equal(await readFile(path, 'utf8'), 'new');
    const left = (await readdir(dir)).filter((name) => name !== 'note.md');
    assert.deepEqual(left.sort(), planted.sort(), 'the planted files untouched, no temp file left');
  });

  it('creates a new file with the content and leaves no temp file', async () => {
    const path = join(dir, 'note.md');
    await writeFileAtomic(path, '# Hello\nwörld ✓\n');
    assert.equal(await readFile(path, 'utf8'), '# Hello\nwörld ✓\n');
    assert.deepEqual(await readdir(dir), ['note.md']);
  });

  it('replaces an existing file and keeps its permission bits', async () => {
    const path = join(dir, 'note.md');
    await writeFile(path, 'old content that is longer than the new one');
    await chmod(path, 0o600);
    await writeFileAtomic(path, 'new', { fsyncDir: false });
    assert.equal(await readFile(path, 'utf8'), 'new');
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.deepEqual(await readdir(dir), ['note.md']);
    // Bits the umask (022 here) would take away at the create are put back.
    for (const mode of [0o666, 0o664, 0o640, 0o444]) {
      await chmod(path, mode);
      await writeFileAtomic(path, `mode ${mode}`, { fsyncDir: false });
      assert.equal((await stat(path)).mode & 0o777, mode, mode.toString(8));
    }
  });

  it('never shows a reader a partial file while writers race', async () => {
    const path = join(dir, 'note.md');
    const versions = Array.from({ length: 20 }, (_, i) => `version ${i} `.repeat(5000));
    await writeFileAtomic(path, versions[0] as string);
    let reading = true;
    const seen = new Set<string>();
    const reader = (async () => {
      while (reading) seen.add(await readFile(path, 'utf8'));
    })();
    await Promise.all(versions.map((v) => writeFileAtomic(path, v)));
    reading = false;
    await reader;
    for (const text of seen)
      assert.ok(versions.includes(text), 'a reader saw a mixed or partial file');
    assert.deepEqual(await readdir(dir), ['note.md']);
  });

  it('fails with a VaultIoError, removes its temp file and keeps the old content', async () => {
    const path = join(dir, 'note.md');
    await writeFile(path, 'original');
    // A directory where the file should be makes the final rename fail after the temp file is written.
    const blocked = join(dir, 'blocked.md');
    await mkdir(join(blocked, 'child'), { recursive: true });
    await assert.rejects(writeFileAtomic(blocked, 'data'), (error: unknown) => {
      assert.ok(error instanceof VaultIoError);
      assert.equal(error.path, blocked);
      assert.ok(['EISDIR', 'ENOTEMPTY', 'EEXIST'].includes(error.code), error.code);
      return true;
    });
    assert.deepEqual((await readdir(dir)).sort(), ['blocked.md', 'note.md']);
    assert.equal(await readFile(path, 'utf8'), 'original');
  });

  it('fails with a VaultIoError when the folder does not exist', async () => {
    await assert.rejects(
      writeFileAtomic(join(dir, 'missing', 'note.md'), 'x'),
      (error: unknown) => {
        assert.ok(error instanceof VaultIoError);
        assert.equal(error.code, 'ENOENT');
        return true;
      },
    );
  });

  it('on a full disk fails with ENOSPC, removes its temp file and keeps the old content', async (t) => {
    // A 1 MiB tmpfs of its own, so filling it touches nothing else.
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]);
    if (mounted.status !== 0) {
      t.skip(`cannot mount a tmpfs here (${mounted.stderr.toString().trim()}): needs root`);
      return;
    }
    try {
      const path = join(dir, 'note.md');
      await writeFile(path, 'original');
      await assert.rejects(writeFileAtomic(path, 'x'.repeat(2 * 1024 * 1024)), (error: unknown) => {
        assert.ok(error instanceof VaultIoError);
        assert.equal(error.code, 'ENOSPC');
        return true;
      });
      assert.deepEqual(await readdir(dir), ['note.md']);
      assert.equal(await readFile(path, 'utf8'), 'original');
      // Space is there again for a write that fits.
      await writeFileAtomic(path, 'fits');
      assert.equal(await readFile(path, 'utf8'), 'fits');
    } finally {
      spawnSync('umount', [dir]);
    }
  });
});
