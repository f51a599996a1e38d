// Red-team finding F4: an agent that can write the vault replaces one of vaultd's folders
// (In_Progress/, Done/, Failed/, Outbox/…) with a symbolic link to a folder outside the vault, and
// vaultd moved notes and wrote files through it. Each test makes that link with real files and
// checks that nothing reaches the outside folder and the note stays where it was.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { link, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CONFIG_DEFAULTS } from '../../src/config/index.ts';
import {
  assertInsideVault,
  claimNote,
  ensureLayout,
  moveClaimed,
  moveNoOverwrite,
  recoverInterruptedMove,
  resolveLayout,
  type VaultLayout,
} from '../../src/vault/index.ts';
import { moveUnnamable } from '../../src/vault/scan.ts';
import { makeFolderInVault } from '../../src/vault/vault-writer.ts';

let base: string;
let outside: string;
let layout: VaultLayout;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'vaultd-folder-links-'));
  outside = join(base, 'outside');
  await mkdir(outside);
  layout = resolveLayout({ vault: join(base, 'vault'), folders: CONFIG_DEFAULTS.folders });
  await ensureLayout(layout);
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

/** Replace a folder of the vault with a symbolic link, as an agent would. */
async function replaceWithLink(dir: string, target = outside): Promise<void> {
  await rm(dir, { recursive: true });
  await symlink(target, dir);
}

/** The refusal: code `EOUTSIDE`, naming the folder. */
function refused(folder: string) {
  return (error: unknown): boolean => {
    assert.equal((error as { code?: string }).code, 'EOUTSIDE');
    assert.match((error as Error).message, new RegExp(folder));
    return true;
  };
}

describe('assertInsideVault', () => {
  it('accepts the vault and its real folders, also when the vault is reached through a link', async () => {
    await assertInsideVault(layout.root, layout.root);
    await assertInsideVault(layout.root, layout.done);
    const alias = join(base, 'alias');
    await symlink(layout.root, alias);
    await assertInsideVault(alias, join(alias, 'Done'));
  });

  it('refuses a folder that is a link to outside, to elsewhere in the vault, or under a link', async () => {
    await replaceWithLink(layout.done);
    await assert.rejects(assertInsideVault(layout.root, layout.done), refused('Done'));
    await replaceWithLink(layout.failed, layout.inbox);
    await assert.rejects(assertInsideVault(layout.root, layout.failed), refused('Failed'));
    await mkdir(join(outside, 'Out'));
    await symlink(outside, join(layout.root, 'Mail'));
    await assert.rejects(
      assertInsideVault(layout.root, join(layout.root, 'Mail', 'Out')),
      refused('Mail'),
    );
    await assert.rejects(assertInsideVault(layout.root, base), refused('not inside the vault'));
  });
});

describe('assertInsideVault, many at once', () => {
  it('gives every check asked for together the right answer, and keeps none once they end', async () => {
    const many = (): Promise<PromiseSettledResult<void>[]> =>
      Promise.allSettled(
        Array.from({ length: 40 }, () => assertInsideVault(layout.root, layout.done)),
      );
    for (const r of await many()) assert.equal(r.status, 'fulfilled');
    // The folder swapped for a link right after: the next checks see the link, none is answered
    // from the checks that passed.
    await replaceWithLink(layout.done);
    for (const r of await many()) {
      assert.equal(r.status, 'rejected');
      refused('Done')((r as PromiseRejectedResult).reason);
    }
    // And back to a real folder: a refusal is not kept either.
    await rm(layout.done);
    await mkdir(layout.done);
    for (const r of await many()) assert.equal(r.status, 'fulfilled');
  });

  it('checks again, alone, when the check it joined failed', async () => {
    await rm(layout.done, { recursive: true });
    const first = assertInsideVault(layout.root, layout.done);
    // Runs before the joined check's own look (its reaction comes first): the folder is there by
    // then, so the joined check passes only if it looked for itself.
    const made = first.catch(() => mkdirSync(layout.done));
    const joined = assertInsideVault(layout.root, layout.done);
    await assert.rejects(first, { code: 'ENOENT' });
    await made;
    await joined;
  });
});

describe('moves never go through a link', () => {
  it('does not claim a note when In_Progress/ is a link: the note stays in the inbox', async () => {
    await writeFile(join(layout.inbox, 'n.md'), 'x');
    await replaceWithLink(layout.inProgress);
    const held = new Set<string>();
    await assert.rejects(
      claimNote(join(layout.inbox, 'n.md'), layout, held),
      refused('In_Progress'),
    );
    assert.deepEqual(await readdir(layout.inbox), ['n.md']);
    assert.deepEqual(await readdir(outside), []);
    assert.equal(held.size, 0, 'nothing held after a refused claim');
    // A name too long for the claim tag takes the other path; refused the same.
    const long = `${'x'.repeat(240)}.md`;
    await writeFile(join(layout.inbox, long), 'x');
    await assert.rejects(claimNote(join(layout.inbox, long), layout), refused('In_Progress'));
    assert.deepEqual(await readdir(outside), []);
  });

  for (const folder of ['inbox', 'approved', 'pending', 'rejected'] as const) {
    it(`takes nothing in from outside when ${CONFIG_DEFAULTS.folders[folder]}/ is a link (review finding)`, async () => {
      // The agent's move: the folder vaultd takes notes from replaced with a link to a folder of
      // the user's, whose notes vaultd would otherwise claim, rewrite and file under Done/.
      await writeFile(
        join(outside, 'howto.md'),
        'the user\'s own note\n```json\n{"tool_call":{}}\n```\n',
      );
      await replaceWithLink(layout[folder]);
      const held = new Set<string>();
      await assert.rejects(
        claimNote(join(layout[folder], 'howto.md'), layout, held),
        refused(CONFIG_DEFAULTS.folders[folder]),
      );
      const long = `${'y'.repeat(240)}.md`;
      await writeFile(join(outside, long), 'x');
      await assert.rejects(
        claimNote(join(layout[folder], long), layout),
        refused(CONFIG_DEFAULTS.folders[folder]),
      );
      assert.deepEqual((await readdir(outside)).sort(), ['howto.md', long].sort());
      assert.deepEqual(await readdir(layout.inProgress), []);
      assert.equal(held.size, 0);
    });
  }

  for (const folder of ['done', 'failed', 'pending', 'rejected'] as const) {
    it(`does not move a finished note into ${CONFIG_DEFAULTS.folders[folder]}/ when it is a link`, async () => {
      const note = join(layout.inProgress, 'n.vaultd-1-2-abcd-3.md');
      await writeFile(note, 'x');
      await replaceWithLink(layout[folder]);
      await assert.rejects(
        moveClaimed(note, layout[folder], 'n.md', layout.root),
        refused(CONFIG_DEFAULTS.folders[folder]),
      );
      await assert.rejects(
        moveNoOverwrite(note, layout[folder], 'n.md', { vault: layout.root }),
        refused(CONFIG_DEFAULTS.folders[folder]),
      );
      assert.deepEqual(await readdir(layout.inProgress), ['n.vaultd-1-2-abcd-3.md']);
      assert.deepEqual(await readdir(outside), []);
    });
  }

  it('does not take a second name behind a linked folder for the note after a cut move', async () => {
    const note = join(layout.inProgress, 'n.vaultd-1-2-abcd-3.md');
    await writeFile(note, 'x');
    await replaceWithLink(layout.done);
    await link(note, join(outside, 'n.md'));
    assert.equal(await recoverInterruptedMove(note, layout), null);
    assert.deepEqual(await readdir(layout.inProgress), ['n.vaultd-1-2-abcd-3.md']);
  });

  it('does not move a note with an unreadable name into a linked Failed/', async () => {
    await writeFile(Buffer.from(`${layout.inbox}/bad-\xff.md`, 'latin1'), 'x');
    await replaceWithLink(layout.failed);
    const out = await moveUnnamable(layout.inbox, layout.failed, layout.root);
    assert.equal(out.moved.length, 0);
    assert.equal(out.failed.length, 1);
    assert.deepEqual(await readdir(outside), []);
  });
});

describe('makeFolderInVault', () => {
  it('makes missing folders inside the vault', async () => {
    await makeFolderInVault(layout.root, join(layout.root, 'Mail', 'Out'));
    assert.deepEqual(await readdir(join(layout.root, 'Mail')), ['Out']);
  });

  it('makes nothing through a link on the way', async () => {
    await symlink(outside, join(layout.root, 'Mail'));
    await assert.rejects(
      makeFolderInVault(layout.root, join(layout.root, 'Mail', 'Out')),
      refused('Mail'),
    );
    assert.deepEqual(await readdir(outside), []);
    // A dangling link in the folder's place is not followed either.
    await symlink(join(outside, 'made'), join(layout.root, 'Outbox2'));
    await assert.rejects(makeFolderInVault(layout.root, join(layout.root, 'Outbox2')));
    assert.deepEqual(await readdir(outside), []);
  });
});
