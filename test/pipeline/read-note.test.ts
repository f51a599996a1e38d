// readNote reads a note in one read call; what it reports for every kind of file it may meet.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFile,
  link,
  mkdtemp,
  readFile,
  rename,
  rm,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { isSameNote, readNote, releaseNote, type TextRead } from '../../src/pipeline/read-note.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vaultd-read-note-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a note is read whole, whatever its size under the cap', async () => {
  for (const size of [0, 1, 4095, 4096, 4097, 200_000]) {
    const text = 'é'.repeat(Math.floor(size / 2)) + 'x'.repeat(size % 2);
    const path = join(dir, `n${size}.md`);
    await writeFile(path, text);
    const read = await readNote(path, 1_000_000);
    assert.equal(read.kind, 'text');
    if (read.kind === 'text') {
      assert.equal(read.text, text);
      assert.equal(read.size, Buffer.byteLength(text));
    }
  }
});

test('too large, binary, not UTF-8, a link, a hard link and a vanished file are told apart', async () => {
  await writeFile(join(dir, 'big.md'), `${'a'.repeat(100)} tool_call`);
  assert.deepEqual(await readNote(join(dir, 'big.md'), 50), {
    kind: 'too_large',
    size: 110,
    mentionsToolCall: false,
  });
  await writeFile(join(dir, 'edge.md'), 'a'.repeat(50));
  assert.equal((await readNote(join(dir, 'edge.md'), 50)).kind, 'text');
  await writeFile(join(dir, 'bin.md'), Buffer.from([0x74, 0, 0x6f]));
  assert.equal((await readNote(join(dir, 'bin.md'), 100)).kind, 'binary');
  await writeFile(join(dir, 'latin1.md'), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  assert.equal((await readNote(join(dir, 'latin1.md'), 100)).kind, 'not_utf8');
  await symlink(join(dir, 'edge.md'), join(dir, 'link.md'));
  assert.equal((await readNote(join(dir, 'link.md'), 100)).kind, 'not_a_file');
  await link(join(dir, 'edge.md'), join(dir, 'hard.md'));
  assert.equal((await readNote(join(dir, 'hard.md'), 100)).kind, 'linked');
  assert.equal((await readNote(join(dir, 'gone.md'), 100)).kind, 'gone');
});

test('a file whose size the status does not tell is read to its end or the cap', async () => {
  // /proc files report size 0 and hold text: the read goes on past the size fstat gave.
  const whole = await readFile('/proc/self/mountinfo', 'utf8');
  const read = await readNote('/proc/self/mountinfo', 10_000_000);
  assert.equal(read.kind, 'text');
  // The mounts cannot change under this test; the first line is stable enough to compare.
  if (read.kind === 'text') assert.equal(read.text.split('\n')[0], whole.split('\n')[0]);
  assert.ok(whole.length > 200, 'mountinfo is longer than the cap below');
  assert.equal((await readNote('/proc/self/mountinfo', 100)).kind, 'too_large');
});

test('a fifo and a device are refused without blocking', async () => {
  const fifo = join(dir, 'pipe.md');
  const made = spawnSync('mkfifo', [fifo]);
  assert.equal(made.status, 0, made.stderr.toString());
  assert.equal((await readNote(fifo, 100)).kind, 'not_a_file');
  assert.equal((await readNote('/dev/null', 100)).kind, 'not_a_file');
  assert.equal((await readNote(dir, 100)).kind, 'not_a_file');
});

/** A note read with its file held open, as the pipeline reads before a claim. */
async function held(name: string, text: string): Promise<{ read: TextRead; path: string }> {
  const path = join(dir, name);
  await writeFile(path, text);
  const read = await readNote(path, 1000, true);
  assert.equal(read.kind, 'text');
  assert.ok(read.kind === 'text' && read.held !== undefined);
  return { read, path };
}

test('a claim is checked against the file read: the same file, moved, is the note read', async () => {
  const { read, path } = await held('same.md', 'tool_call one');
  const claimed = join(dir, 'same.claimed.md');
  await rename(path, claimed);
  assert.equal(await isSameNote(read, claimed), true);
  releaseNote(read);
  assert.equal(read.held?.closed, true);
  // Released: nothing vouches for the inode any more, so the note must be read again.
  assert.equal(await isSameNote(read, claimed), false);
  releaseNote(read);
});

test('a file swapped in, edited, linked or replaced by a link before the claim is read again', async () => {
  // Another file renamed over the note's name between the read and the claim, same text and size.
  const swap = await held('swap.md', 'tool_call aaa');
  await writeFile(join(dir, 'swap.tmp'), 'tool_call aaa');
  await rename(join(dir, 'swap.tmp'), swap.path);
  assert.equal(await isSameNote(swap.read, swap.path), false);
  releaseNote(swap.read);

  // The note deleted and a new one written under its name (the old inode is held: never reused).
  const recreated = await held('recreated.md', 'tool_call bbb');
  await unlink(recreated.path);
  await writeFile(recreated.path, 'tool_call bbb');
  assert.equal(await isSameNote(recreated.read, recreated.path), false);
  releaseNote(recreated.read);

  const edited = await held('edited.md', 'tool_call ccc');
  await appendFile(edited.path, ' and more');
  assert.equal(await isSameNote(edited.read, edited.path), false);
  releaseNote(edited.read);

  const linked = await held('linked.md', 'tool_call ddd');
  await link(linked.path, join(dir, 'linked-2.md'));
  assert.equal(await isSameNote(linked.read, linked.path), false);
  releaseNote(linked.read);

  const symlinked = await held('symlinked.md', 'tool_call eee');
  await rename(symlinked.path, join(dir, 'symlinked-target.md'));
  await symlink(join(dir, 'symlinked-target.md'), symlinked.path);
  assert.equal(await isSameNote(symlinked.read, symlinked.path), false);
  releaseNote(symlinked.read);

  const vanished = await held('vanished.md', 'tool_call fff');
  await unlink(vanished.path);
  assert.equal(await isSameNote(vanished.read, vanished.path), false);
  releaseNote(vanished.read);
});

test('a read without hold keeps nothing open and never vouches for a claim', async () => {
  const path = join(dir, 'plain.md');
  await writeFile(path, 'tool_call');
  const read = await readNote(path, 1000);
  assert.ok(read.kind === 'text');
  assert.equal(read.held, undefined);
  assert.equal(await isSameNote(read, path), false);
  // Kinds other than text close the file at once even when asked to hold it.
  await writeFile(join(dir, 'held-bin.md'), Buffer.from([0x74, 0, 0x6f]));
  const binary = await readNote(join(dir, 'held-bin.md'), 100, true);
  assert.equal(binary.kind, 'binary');
});
