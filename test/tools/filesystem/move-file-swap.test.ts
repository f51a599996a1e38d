// Review finding: move_file of a file checks nothing inside what it moves (a file has no tree),
// so a folder the agent swapped in at the source's name after the handler looked, by a background
// job exchanging two names (renameat2 RENAME_EXCHANGE in a loop,
// /work/scratch/rvB/fs-move-file-swap.test.ts), was renamed to the destination unchecked, with the
// `.git/hooks/post-checkout` and `.git/HEAD` it held. Here the exchange is made at the exact moment
// of the race, deterministically: just before the handler's first link() or rename() of the source,
// through Node's own functions (`syncBuiltinESMExports` makes the module's imports see them).
import assert from 'node:assert/strict';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import fsPromises from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { basename } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { moveFile } from '../../../src/tools/filesystem/change.ts';
import { makeSandbox, refused, type FsSandbox } from './helpers.ts';

describe('move_file of a file whose name the agent swaps with a folder while the call runs', () => {
  let box: FsSandbox;
  /** Names to exchange just before the next link() or rename() of the first, once. */
  let swap: { readonly at: string; readonly with: string } | undefined;
  let swapped = false;
  const { link, rename } = fsPromises;
  const exchange = (from: unknown): void => {
    if (swap === undefined || basename(String(from)) !== basename(swap.at)) return;
    const { at, with: other } = swap;
    swap = undefined;
    renameSync(at, `${at}.swap`);
    renameSync(other, at);
    renameSync(`${at}.swap`, other);
    swapped = true;
  };
  before(async () => {
    box = await makeSandbox({ scratch: ['Scratch'] });
    fsPromises.link = async (from, to) => {
      exchange(from);
      return link(from, to);
    };
    fsPromises.rename = async (from, to) => {
      exchange(from);
      return rename(from, to);
    };
    syncBuiltinESMExports();
  });
  after(async () => {
    fsPromises.link = link;
    fsPromises.rename = rename;
    syncBuiltinESMExports();
    await box.cleanup();
  });
  /** The scratch folder as the agent leaves it: a file, and a folder holding a git folder. */
  const plant = (): void => {
    const v = box.vault;
    for (const p of ['Scratch', 'Notes/moved', 'Notes/kept.md']) {
      rmSync(`${v}/${p}`, { recursive: true, force: true });
    }
    mkdirSync(`${v}/Scratch/evil/.git/hooks`, { recursive: true });
    writeFileSync(`${v}/Scratch/evil/.git/hooks/post-checkout`, '#!/bin/sh\ntouch /tmp/pwned\n', {
      mode: 0o755,
    });
    writeFileSync(`${v}/Scratch/evil/.git/HEAD`, 'ref: refs/heads/main\n');
    writeFileSync(`${v}/Scratch/note.txt`, 'an innocent file\n');
    swapped = false;
  };
  beforeEach(plant);

  it('refuses the folder swapped in, which stays where it was (the attack replayed)', async () => {
    const v = box.vault;
    swap = { at: `${v}/Scratch/note.txt`, with: `${v}/Scratch/evil` };
    await refused(
      box.call(moveFile, {
        source: 'Scratch/note.txt',
        destination: 'Notes/moved',
        overwrite: true,
      }),
      'PERMISSION_DENIED',
      /Scratch\/note\.txt changed while the call ran \(a folder or another entry took its name\); nothing was moved/,
    );
    assert.equal(swapped, true, 'the agent made its swap');
    assert.equal(existsSync(`${v}/Notes/moved`), false, 'nothing landed at the destination');
    assert.ok(lstatSync(`${v}/Scratch/note.txt`).isDirectory(), 'the folder is where it was');
    assert.ok(existsSync(`${v}/Scratch/note.txt/.git/hooks/post-checkout`));
    assert.equal(readFileSync(`${v}/Scratch/evil`, 'utf8'), 'an innocent file\n');
  });

  it('refuses it without overwrite, and over a file, which stays as it was', async () => {
    const v = box.vault;
    swap = { at: `${v}/Scratch/note.txt`, with: `${v}/Scratch/evil` };
    await refused(
      box.call(moveFile, { source: 'Scratch/note.txt', destination: 'Notes/moved' }),
      'PERMISSION_DENIED',
      /changed while the call ran/,
    );
    assert.equal(existsSync(`${v}/Notes/moved`), false);
    plant();
    writeFileSync(`${v}/Notes/kept.md`, "the human's file\n");
    swap = { at: `${v}/Scratch/note.txt`, with: `${v}/Scratch/evil` };
    await refused(
      box.call(moveFile, {
        source: 'Scratch/note.txt',
        destination: 'Notes/kept.md',
        overwrite: true,
      }),
      'PERMISSION_DENIED',
      /changed while the call ran/,
    );
    assert.equal(readFileSync(`${v}/Notes/kept.md`, 'utf8'), "the human's file\n");
  });

  it('refuses another file swapped in, and moves neither', async () => {
    const v = box.vault;
    writeFileSync(`${v}/Scratch/other.txt`, 'another file\n');
    swap = { at: `${v}/Scratch/note.txt`, with: `${v}/Scratch/other.txt` };
    await refused(
      box.call(moveFile, {
        source: 'Scratch/note.txt',
        destination: 'Notes/moved',
        overwrite: true,
      }),
      'PERMISSION_DENIED',
      /another file took its name\); nothing was moved/,
    );
    assert.equal(existsSync(`${v}/Notes/moved`), false);
    assert.equal(readFileSync(`${v}/Scratch/note.txt`, 'utf8'), 'another file\n');
    assert.equal(readFileSync(`${v}/Scratch/other.txt`, 'utf8'), 'an innocent file\n');
    assert.equal(lstatSync(`${v}/Scratch/note.txt`).nlink, 1, 'no link left behind');
  });

  it('still moves a file nobody swaps, over a file with overwrite, leaving no temporary file', async () => {
    const v = box.vault;
    writeFileSync(`${v}/Notes/kept.md`, 'old\n');
    const out = await box.call(moveFile, {
      source: 'Scratch/note.txt',
      destination: 'Notes/kept.md',
      overwrite: true,
    });
    assert.equal(out.data.type, 'file');
    assert.equal(readFileSync(`${v}/Notes/kept.md`, 'utf8'), 'an innocent file\n');
    assert.equal(lstatSync(`${v}/Notes/kept.md`).nlink, 1);
    assert.equal(existsSync(`${v}/Scratch/note.txt`), false);
    assert.deepEqual(
      (await fsPromises.readdir(`${v}/Notes`)).filter((n) => n.endsWith('.vaultd-tmp')),
      [],
    );
  });
});
