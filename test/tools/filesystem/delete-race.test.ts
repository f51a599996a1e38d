// Review finding: delete_file with recursive used Node's rm(recursive), which works by path
// names. A folder the agent swapped for a link between rm's "not empty" and its listing had the
// link's target emptied: files outside the roots, or in vaultd's own folders. The delete now goes
// one pinned folder at a time; these tests make the agent's swap at the moment it would hurt.
import assert from 'node:assert/strict';
import type * as NodeFs from 'node:fs';
import { existsSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { deleteFile } from '../../../src/tools/filesystem/change.ts';
import { makeSandbox, type FsSandbox } from './helpers.ts';

const fs = createRequire(import.meta.url)('node:fs') as typeof NodeFs;

describe('delete_file recursive, with a folder swapped for a link while it runs', () => {
  let box: FsSandbox;
  const promises = fs.promises as unknown as Record<string, unknown>;
  const realReaddir = fs.promises.readdir;
  beforeEach(async () => {
    box = await makeSandbox();
    mkdirSync(`${box.outside}/keep`, { recursive: true });
    writeFileSync(`${box.outside}/keep/secret.txt`, 'outside the roots');
    mkdirSync(`${box.vault}/Notes/victim/sub`, { recursive: true });
    writeFileSync(`${box.vault}/Notes/victim/a.txt`, 'a');
    writeFileSync(`${box.vault}/Notes/victim/sub/b.txt`, 'b');
  });
  afterEach(async () => {
    promises['readdir'] = realReaddir;
    syncBuiltinESMExports();
    await box.cleanup();
  });

  /**
   * The agent's move, made once, just before the delete first lists a folder (after it opened the
   * folder it lists). Node's rm(recursive), used before, lists by path name after a "not empty":
   * its internal calls cannot be hooked from here; the review replayed that with a patched rmdir.
   */
  function swapOnFirstListing(swap: () => void): void {
    let count = 0;
    promises['readdir'] = async (...args: Parameters<typeof realReaddir>) => {
      if (++count === 1) swap();
      return realReaddir(...args);
    };
    syncBuiltinESMExports();
  }

  it('the folder itself swapped: nothing outside is deleted', async () => {
    swapOnFirstListing(() => {
      renameSync(`${box.vault}/Notes/victim`, `${box.vault}/Notes/victim.old`);
      symlinkSync(`${box.outside}/keep`, `${box.vault}/Notes/victim`);
    });
    await box.call(deleteFile, { path: 'Notes/victim', recursive: true }).catch(() => undefined);
    assert.equal(existsSync(`${box.outside}/keep/secret.txt`), true);
  });

  it('a folder inside swapped: the link is removed, not followed', async () => {
    swapOnFirstListing(() => {
      renameSync(`${box.vault}/Notes/victim/sub`, `${box.vault}/Notes/sub.old`);
      symlinkSync(`${box.outside}/keep`, `${box.vault}/Notes/victim/sub`);
    });
    await box.call(deleteFile, { path: 'Notes/victim', recursive: true }).catch(() => undefined);
    assert.equal(existsSync(`${box.outside}/keep/secret.txt`), true);
    assert.equal(existsSync(`${box.vault}/Notes/victim`), false, 'the folder itself is gone');
  });

  it('a deep chain renamed into the folder after the check: the delete stops at the checked depth (review finding)', async () => {
    // The check stops at 64 levels, but the delete went as deep as whatever was there by then,
    // holding a descriptor a level: 2,000 levels used up every descriptor of the daemon.
    swapOnFirstListing(() => {
      let path = `${box.vault}/Notes/chain`;
      for (let i = 0; i < 100; i++) path += '/d';
      mkdirSync(path, { recursive: true });
      renameSync(`${box.vault}/Notes/chain`, `${box.vault}/Notes/victim/sub/chain`);
    });

    await assert.rejects(
      box.call(deleteFile, { path: 'Notes/victim', recursive: true }),
      /grew deeper while it was deleted; part of it may be gone/,
    );
  });

  it('without a swap, deletes the whole tree', async () => {
    await box.call(deleteFile, { path: 'Notes/victim', recursive: true });
    assert.equal(existsSync(`${box.vault}/Notes/victim`), false);
  });
});
