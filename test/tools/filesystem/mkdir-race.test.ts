// Review finding: create_directory, and write_file for missing folders above a file, made the
// folders by path (mkdir recursive) after the path was checked. A folder on the way that the agent
// swapped for a link in between had the new folders made where the link pointed: In_Progress/ or
// outside the roots. The folders are now made one level at a time inside pinned folders.
import assert from 'node:assert/strict';
import { readdirSync, renameSync, symlinkSync } from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createDirectory, writeFile } from '../../../src/tools/filesystem/write.ts';
import { makeSandbox, type FsSandbox } from './helpers.ts';

describe('folders made while a folder on the way is swapped for a link', () => {
  let box: FsSandbox;
  beforeEach(async () => {
    box = await makeSandbox();
  });
  afterEach(async () => {
    await box.cleanup();
  });

  /** The agent's move, once the path is checked: Notes/ becomes a link to In_Progress/. */
  const swapAfterCheck = (target: string) => {
    let armed = true;
    return async (path: string): Promise<void> => {
      if (!armed || !path.endsWith(target)) return;
      armed = false;
      renameSync(`${box.vault}/Notes`, `${box.vault}/Notes.old`);
      symlinkSync(`${box.vault}/In_Progress`, `${box.vault}/Notes`);
    };
  };

  for (const [name, tool, args] of [
    ['write_file', writeFile, { path: 'Notes/new/deep/f.md', content: 'x' }],
    ['create_directory', createDirectory, { path: 'Notes/new/deep' }],
  ] as const) {
    it(`${name}: nothing is made where the link points, and the call fails`, async () => {
      await assert.rejects(
        box.call(tool as never, args, swapAfterCheck('Notes/new/deep') as never),
        /changed while the call ran/,
      );
      assert.deepEqual(readdirSync(`${box.vault}/In_Progress`), []);
    });
  }

  it('without a swap, makes every missing folder', async () => {
    await box.call(createDirectory as never, { path: 'Notes/a/b/c' });
    assert.deepEqual(readdirSync(`${box.vault}/Notes/a/b`), ['c']);
  });
});
