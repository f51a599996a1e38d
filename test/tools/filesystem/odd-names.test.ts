// Review finding: a folder holding a name the tools cannot spell (a line break; bytes that are
// not UTF-8, which Node reads as U+FFFD, so the name read is not the file's) failed its delete
// or move as if the agent's own path were wrong, or as "does not exist", with part of the tree
// deleted; create_directory under a file blamed a race.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { deleteFile, moveFile } from '../../../src/tools/filesystem/change.ts';
import { createDirectory } from '../../../src/tools/filesystem/write.ts';
import { makeSandbox, type FsSandbox } from './helpers.ts';

describe('names the tools cannot spell', () => {
  let box: FsSandbox;
  beforeEach(async () => {
    box = await makeSandbox();
    mkdirSync(`${box.vault}/Notes/t/sub`, { recursive: true });
    writeFileSync(`${box.vault}/Notes/t/sub/keep.txt`, 'kept');
  });
  afterEach(async () => {
    await box.cleanup();
  });

  for (const [what, make] of [
    ['a line break', () => writeFileSync(`${box.vault}/Notes/t/a\nb.txt`, 'x')],
    [
      'bytes that are not UTF-8',
      () => writeFileSync(Buffer.from(`${box.vault}/Notes/t/\xff\xfe.txt`, 'latin1'), 'x'),
    ],
  ] as const) {
    it(`a file whose name holds ${what}: delete and move refused, naming it, nothing changed`, async () => {
      make();
      for (const [tool, args] of [
        [deleteFile, { path: 'Notes/t', recursive: true }],
        [moveFile, { source: 'Notes/t', destination: 'Notes/t2' }],
      ] as const) {
        await assert.rejects(
          box.call(tool as never, args),
          /has a name this tool cannot handle .*rename or remove it another way/,
        );
        assert.equal(existsSync(`${box.vault}/Notes/t/sub/keep.txt`), true);
        assert.equal(existsSync(`${box.vault}/Notes/t2`), false);
        assert.equal(readdirSync(`${box.vault}/Notes/t`).length, 2);
      }
    });
  }

  it('create_directory under a file says so', async () => {
    writeFileSync(`${box.vault}/Notes/file.txt`, 'x');
    await assert.rejects(
      box.call(createDirectory as never, { path: 'Notes/file.txt/sub' }),
      /Notes\/file\.txt is a file, so no folder can be made inside it/,
    );
  });
});
