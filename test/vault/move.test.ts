import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import {
  link,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { configureFastPath } from '../../src/vault/fs-calls.ts';
import {
  claimNote,
  ensureLayout,
  isClaimedByOther,
  moveClaimed,
  moveNoOverwrite,
  readClaimedName,
  recoverInterruptedMove,
  resolveLayout,
  suffixedName,
  VaultIoError,
} from '../../src/vault/index.ts';
import { CONFIG_DEFAULTS } from '../../src/config/index.ts';

let root: string;
let src: string;
let dest: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'vaultd-move-'));
  src = join(root, 'src');
  dest = join(root, 'dest');
  await mkdir(src);
  await mkdir(dest);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('suffixedName', () => {
  it('puts the number before the extension', () => {
    assert.equal(suffixedName('task.md', 0), 'task.md');
    assert.equal(suffixedName('task.md', 1), 'task-1.md');
    assert.equal(suffixedName('my.task.md', 2), 'my.task-2.md');
    assert.equal(suffixedName('README', 3), 'README-3');
    assert.equal(suffixedName('.hidden', 1), '.hidden-1');
  });

  it('cuts the name short, at a character, when the number would take it past 255 bytes', () => {
    const long = `${'é'.repeat(125)}.md`; // 253 bytes
    const next = suffixedName(long, 12);
    assert.ok(Buffer.byteLength(next) <= 255, `${Buffer.byteLength(next)} bytes`);
    assert.equal(next, `${'é'.repeat(124)}-12.md`);
    // Never half a character: a stem of 4-byte characters loses whole ones.
    const emoji = `${'😀'.repeat(63)}.md`; // 255 bytes
    assert.equal(suffixedName(emoji, 1), `${'😀'.repeat(62)}-1.md`);
  });
});

describe('moveNoOverwrite', () => {
  it('moves a file under its own name', async () => {
    await writeFile(join(src, 'task.md'), 'body');
    const moved = await moveNoOverwrite(join(src, 'task.md'), dest);
    assert.equal(moved, join(dest, 'task.md'));
    assert.equal(await readFile(join(dest, 'task.md'), 'utf8'), 'body');
    assert.deepEqual(await readdir(src), []);
  });

  it('numbers the name when it is taken: task.md, task-1.md, task-2.md', async () => {
    for (const [i, expected] of ['task.md', 'task-1.md', 'task-2.md'].entries()) {
      await writeFile(join(src, 'task.md'), `version ${i}`);
      assert.equal(await moveNoOverwrite(join(src, 'task.md'), dest), join(dest, expected));
    }
    assert.deepEqual((await readdir(dest)).sort(), ['task-1.md', 'task-2.md', 'task.md']);
    assert.equal(await readFile(join(dest, 'task.md'), 'utf8'), 'version 0');
    assert.equal(await readFile(join(dest, 'task-1.md'), 'utf8'), 'version 1');
    assert.equal(await readFile(join(dest, 'task-2.md'), 'utf8'), 'version 2');
  });

  it('uses the given name', async () => {
    await writeFile(join(src, 'a.md'), 'a');
    assert.equal(
      await moveNoOverwrite(join(src, 'a.md'), dest, 'b.md', { fsync: true }),
      join(dest, 'b.md'),
    );
  });

  it('returns null when the source vanished', async () => {
    assert.equal(await moveNoOverwrite(join(src, 'gone.md'), dest), null);
    assert.deepEqual(await readdir(dest), []);
  });

  it('throws a VaultIoError when the target folder is missing, and keeps the file', async () => {
    await writeFile(join(src, 'task.md'), 'body');
    await assert.rejects(
      moveNoOverwrite(join(src, 'task.md'), join(root, 'nope')),
      (error: unknown) => {
        assert.ok(error instanceof VaultIoError);
        assert.equal(error.code, 'ENOENT');
        return true;
      },
    );
    assert.equal(await readFile(join(src, 'task.md'), 'utf8'), 'body');
  });

  it('never overwrites: 50 concurrent movers of 50 files with one name give 50 files', async () => {
    const sources: string[] = [];
    for (let i = 0; i < 50; i += 1) {
      const dir = join(src, `d${i}`);
      await mkdir(dir);
      await writeFile(join(dir, 'task.md'), `content ${i}`);
      sources.push(join(dir, 'task.md'));
    }
    const moved = await Promise.all(sources.map((path) => moveNoOverwrite(path, dest)));
    assert.equal(new Set(moved).size, 50);
    assert.ok(moved.every((path) => path !== null));
    const names = await readdir(dest);
    assert.equal(names.length, 50);
    const contents = await Promise.all(names.map((name) => readFile(join(dest, name), 'utf8')));
    assert.deepEqual(contents.sort(), Array.from({ length: 50 }, (_, i) => `content ${i}`).sort());
  });

  it("keeps an editor's save that replaced the file between the link and the unlink (review finding)", async () => {
    await writeFile(join(src, 'task.md'), 'old text');
    const promises = fs.promises as unknown as Record<string, unknown>;
    const realLink = fs.promises.link;
    promises['link'] = async (from: string, to: string): Promise<void> => {
      await realLink(from, to);
      // The editor's save: a new file renamed over the note.
      await writeFile(join(src, '.save.tmp'), 'newer text');
      await rename(join(src, '.save.tmp'), from);
    };
    syncBuiltinESMExports();
    try {
      assert.equal(await moveNoOverwrite(join(src, 'task.md'), dest), null);
    } finally {
      promises['link'] = realLink;
      syncBuiltinESMExports();
    }
    assert.equal(await readFile(join(src, 'task.md'), 'utf8'), 'newer text');
    assert.deepEqual(await readdir(dest), []);
  });

  it('moves across devices by a copy made durable before the original goes', async (t) => {
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dest]);
    if (mounted.status !== 0) return t.skip('cannot mount a tmpfs here: needs root');
    try {
      await writeFile(join(src, 'task.md'), 'across');
      await writeFile(join(dest, 'task.md'), 'taken');
      assert.equal(await moveNoOverwrite(join(src, 'task.md'), dest), join(dest, 'task-1.md'));
      assert.equal(await readFile(join(dest, 'task-1.md'), 'utf8'), 'across');
      assert.equal(await readFile(join(dest, 'task.md'), 'utf8'), 'taken');
      assert.deepEqual(await readdir(src), []);
    } finally {
      spawnSync('umount', [dest]);
    }
  });

  it('of two concurrent movers of the same file, exactly one wins', async () => {
    const other = join(root, 'other');
    await mkdir(other);
    for (let round = 0; round < 20; round += 1) {
      await writeFile(join(src, 'task.md'), `round ${round}`);
      const results = await Promise.all([
        moveNoOverwrite(join(src, 'task.md'), dest, `r${round}.md`),
        moveNoOverwrite(join(src, 'task.md'), other, `r${round}.md`),
      ]);
      assert.equal(
        results.filter((r) => r !== null).length,
        1,
        `round ${round}: ${results.join(', ')}`,
      );
    }
    const all = [...(await readdir(dest)), ...(await readdir(other))];
    assert.equal(all.length, 20);
    assert.deepEqual(await readdir(src), []);
  });
});

describe('moveClaimed', () => {
  for (const mode of ['fast path', 'thread pool'] as const) {
    it(`${mode}: notes of one name finishing together each keep their own file (review finding)`, async () => {
      // Two claimed notes called task.md (an agent dropped task.md again after the first was
      // claimed) finishing at once: both saw Done/task-1.md free, and the second rename replaced
      // the first note.
      configureFastPath({ allowed: mode === 'fast path', sliceLimitMs: Number.POSITIVE_INFINITY });
      try {
        await writeFile(join(dest, 'task.md'), 'yesterday');
        const claimed: string[] = [];
        for (let i = 0; i < 12; i += 1) {
          const path = join(src, `task.vaultd-1-2-abcd-${i}.md`);
          await writeFile(path, `note ${i}`);
          claimed.push(path);
        }
        const moved = await Promise.all(
          claimed.map((path) => moveClaimed(path, dest, 'task.md', root)),
        );
        assert.equal(new Set(moved).size, 12, moved.join(', '));
        assert.deepEqual(await readdir(src), []);
        const texts = await Promise.all(
          (await readdir(dest)).map((name) => readFile(join(dest, name), 'utf8')),
        );
        assert.deepEqual(
          texts.sort(),
          ['yesterday', ...Array.from({ length: 12 }, (_, i) => `note ${i}`)].sort(),
        );
      } finally {
        configureFastPath();
      }
    });
  }

  it('does not take an early look made stale by a move of that name that ended meanwhile (review finding)', async () => {
    // B looked at Done/task.md while A's rename was under way and found it free; B's folder check
    // was slow, so B reserved the name after A had released it, took its old look and replaced A.
    configureFastPath({ allowed: false });
    const callbacks = createRequire(import.meta.url)('node:fs') as typeof fs & {
      realpath: { native: (...args: unknown[]) => void };
    };
    const realRename = callbacks.rename;
    const realNative = callbacks.realpath.native;
    const a = join(src, 'task.vaultd-1-2-abcd-0.md');
    const b = join(src, 'task.vaultd-1-2-abcd-1.md');
    await writeFile(a, 'note A');
    await writeFile(b, 'note B');
    let second: Promise<string | null> | undefined;
    let slowCheck = false;
    const patched = callbacks as unknown as Record<string, unknown>;
    patched['rename'] = (from: string, to: string, done: (error: Error | null) => void): void => {
      if (from !== a) return void realRename(from, to, done);
      second = moveClaimed(b, dest, 'task.md', root);
      slowCheck = true;
      setTimeout(() => realRename(from, to, done), 10);
    };
    callbacks.realpath.native = (path: unknown, ...rest: unknown[]): void => {
      if (slowCheck && path === dest) setTimeout(() => realNative(path, ...rest), 50);
      else realNative(path, ...rest);
    };
    syncBuiltinESMExports();
    try {
      const first = await moveClaimed(a, dest, 'task.md', root);
      assert.notEqual(second, undefined);
      const other = await second;
      assert.deepEqual([first, other], [join(dest, 'task.md'), join(dest, 'task-1.md')]);
      assert.equal(await readFile(join(dest, 'task.md'), 'utf8'), 'note A');
      assert.equal(await readFile(join(dest, 'task-1.md'), 'utf8'), 'note B');
    } finally {
      patched['rename'] = realRename;
      callbacks.realpath.native = realNative;
      syncBuiltinESMExports();
      configureFastPath();
    }
  });

  it('and a no-overwrite move into the same folder at once never replace each other', async () => {
    const a = join(src, 'a');
    await mkdir(a);
    await writeFile(join(a, 'task.md'), 'moved without overwrite');
    await writeFile(join(src, 'task.vaultd-1-2-abcd-0.md'), 'claimed');
    const moved = await Promise.all([
      moveNoOverwrite(join(a, 'task.md'), dest),
      moveClaimed(join(src, 'task.vaultd-1-2-abcd-0.md'), dest, 'task.md', root),
    ]);
    assert.equal(new Set(moved).size, 2);
    const texts = await Promise.all(
      (await readdir(dest)).map((name) => readFile(join(dest, name), 'utf8')),
    );
    assert.deepEqual(texts.sort(), ['claimed', 'moved without overwrite']);
  });
});

describe('claimNote', () => {
  it('leaves a long-named note in the inbox while a note of its name is in In_Progress (review finding)', async () => {
    // It was claimed under a numbered name, its calls then keyed by that name: after a crash,
    // the calls of a re-saved note, cut off ones included, ran again.
    const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
    await ensureLayout(layout);
    const long = `${'説'.repeat(80)}.md`; // too long for the claim tag
    await writeFile(join(layout.inProgress, long), 'the first, cut off by a kill');
    await writeFile(join(layout.inbox, long), 'saved again');
    const held = new Set([join(layout.inProgress, long)]);
    assert.equal(await claimNote(join(layout.inbox, long), layout, held), null);
    assert.deepEqual([...held], [join(layout.inProgress, long)], 'the other job keeps its hold');
    assert.equal(await claimNote(join(layout.inbox, long), layout, new Set()), null);
    assert.deepEqual(await readdir(layout.inProgress), [long]);
    assert.equal(await readFile(join(layout.inbox, long), 'utf8'), 'saved again');
    await rm(join(layout.inProgress, long));
    assert.equal(await claimNote(join(layout.inbox, long), layout), join(layout.inProgress, long));
  });

  it('moves a note from the inbox into In_Progress', async () => {
    const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
    await ensureLayout(layout);
    await writeFile(join(layout.inbox, 'task.md'), 'x');
    const claimed = await claimNote(join(layout.inbox, 'task.md'), layout);
    assert.ok(claimed !== null);
    assert.equal(dirname(claimed), layout.inProgress);
    // One rename to a name that cannot exist yet, carrying who claimed it and the original name.
    assert.match(
      basename(claimed),
      /^task\.vaultd-[0-9a-z]+-[0-9a-z]*-[0-9a-f]{0,4}-[0-9a-z]+\.md$/,
    );
    assert.equal(readClaimedName(basename(claimed)).original, 'task.md');
    assert.equal(readClaimedName(basename(claimed)).owner?.pid, process.pid);
    assert.equal(isClaimedByOther(basename(claimed)), false, 'our own claim');
    assert.equal(await claimNote(join(layout.inbox, 'task.md'), layout), null);
    assert.deepEqual(await readdir(layout.inbox), []);
  });

  it('holds the claimed path from before the rename, so a scan of In_Progress never finds it unheld', async () => {
    // The race it closes: the daemon's periodic scan of In_Progress/ (notes left behind) ran
    // between the rename and the claimer marking the note as its own, queued the note a second
    // time, and its invalid call was reported twice (seen once in CI).
    const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
    await ensureLayout(layout);
    await writeFile(join(layout.inbox, 'held.md'), 'x');
    const held = new Set<string>();
    const claiming = claimNote(join(layout.inbox, 'held.md'), layout, held);
    // Before the rename has even completed, the path it will have is held.
    assert.equal(held.size, 1);
    const [reserved] = held;
    const claimed = await claiming;
    assert.equal(claimed, reserved);
    for (const name of await readdir(layout.inProgress)) {
      if (name.startsWith('held.')) assert.ok(held.has(join(layout.inProgress, name)), name);
    }
    // A claim that loses (the note is gone) holds nothing.
    const lost = new Set<string>();
    assert.equal(await claimNote(join(layout.inbox, 'held.md'), layout, lost), null);
    assert.equal(lost.size, 0);
  });

  it('records what must be recorded of a claim before the note moves, and moves nothing when that fails', async () => {
    // A decided note's approval requests are bound to its claim here: bound after the rename, a
    // kill in between left the claim with its approval bound elsewhere (found by CI).
    const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
    await ensureLayout(layout);
    const long = `${'説'.repeat(80)}.md`; // claimed under its own name
    for (const name of ['bound.md', long]) {
      const src = join(layout.pending, name);
      await writeFile(src, 'x');
      const seen: string[] = [];
      const claimed = await claimNote(src, layout, new Set(), async (dest) => {
        seen.push(dest);
        assert.equal(await readFile(src, 'utf8'), 'x', 'still where it was');
        assert.deepEqual(await readdir(layout.inProgress), []);
      });
      assert.deepEqual(seen, [claimed]);
      await rm(claimed as string);

      await writeFile(src, 'y');
      const held = new Set<string>();
      await assert.rejects(
        claimNote(src, layout, held, () => Promise.reject(new Error('disk full'))),
        /disk full/,
      );
      assert.equal(await readFile(src, 'utf8'), 'y');
      assert.deepEqual(await readdir(layout.inProgress), []);
      assert.equal(held.size, 0);
      await rm(src);
    }
  });

  it('reads a claim of another process: alive only while that very process runs', () => {
    assert.equal(readClaimedName('plain.md').owner, null);
    assert.equal(readClaimedName('a.vaultd-x.md').original, 'a.vaultd-x.md');
    // pid 1 is alive but started at another time than this made-up start tick.
    assert.equal(isClaimedByOther('a.vaultd-1-zzzzz-0000-0.md'), false);
    assert.equal(readClaimedName('a.b.vaultd-1-2-abcd-3.md').original, 'a.b.md');
  });

  it('undoes a claim of a long name that a kill cut between its link and its unlink (review finding)', async () => {
    // Both names were refused for having two, and the note was stuck for good.
    const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
    await ensureLayout(layout);
    const long = `${'説'.repeat(76)}.md`;
    await writeFile(join(layout.inbox, long), 'never run');
    await link(join(layout.inbox, long), join(layout.inProgress, long));
    assert.equal(
      await recoverInterruptedMove(join(layout.inProgress, long), layout),
      join(layout.inbox, long),
    );
    assert.deepEqual(await readdir(layout.inProgress), []);
    assert.equal(await readFile(join(layout.inbox, long), 'utf8'), 'never run');
    assert.equal((await stat(join(layout.inbox, long))).nlink, 1);
  });

  it('undoes such a claim when it took a numbered name in In_Progress/ (review finding)', async () => {
    // In_Progress/ had the long name already, so the claim linked <name>-1.md; the recovery looked
    // in the inbox for <name>-1.md and its suffixes only, and the note stayed stuck.
    const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
    await ensureLayout(layout);
    const long = `${'説'.repeat(80)}.md`; // too long for the claim tag
    await writeFile(join(layout.inProgress, long), 'an earlier note of that name, still running');
    await writeFile(join(layout.inbox, long), 'never run');
    const numbered = join(layout.inProgress, suffixedName(long, 1));
    await link(join(layout.inbox, long), numbered);
    assert.equal(await recoverInterruptedMove(numbered, layout), join(layout.inbox, long));
    assert.deepEqual(await readdir(layout.inProgress), [long]);
    assert.equal((await stat(join(layout.inbox, long))).nlink, 1);
  });

  it('finishes a final move that a kill cut between its two steps', async () => {
    const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
    await ensureLayout(layout);
    const claimed = join(layout.inProgress, 'n.vaultd-1-2-abcd-3.md');
    await writeFile(claimed, 'x');
    await writeFile(join(layout.done, 'n.md'), 'someone else');
    await link(claimed, join(layout.done, 'n-1.md'));
    assert.equal(await recoverInterruptedMove(claimed, layout), join(layout.done, 'n-1.md'));
    assert.deepEqual(await readdir(layout.inProgress), []);
    assert.equal(await readFile(join(layout.done, 'n.md'), 'utf8'), 'someone else');
  });
});
