// The tools of the filesystem pack that change files: what they write, their per-call effects,
// their previews (unified diffs with the basis they were made from) and their errors.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { changedBasis } from '../../../src/pipeline/preview.ts';
import { copyFile, deleteFile, moveFile } from '../../../src/tools/filesystem/change.ts';
import {
  createDirectory,
  editFile,
  writeFile as writeTool,
} from '../../../src/tools/filesystem/write.ts';
import { makeSandbox, refused, type FsSandbox } from './helpers.ts';

let box: FsSandbox;
beforeEach(async () => {
  box = await makeSandbox({ scratch: ['Scratch'] });
  await mkdir(join(box.vault, 'Scratch'));
  await writeFile(join(box.vault, 'Notes', 'a.md'), 'alpha\nbeta\ngamma\n');
});
afterEach(() => box.cleanup());

const read = (rel: string): Promise<string> => readFile(join(box.vault, rel), 'utf8');

describe('write_file', () => {
  it('creates a file with its folders, atomically, and reports the change', async () => {
    const { data, content } = await box.call(writeTool, {
      path: 'Notes/new/deep/b.md',
      content: 'hello\n',
    });
    assert.equal(await read('Notes/new/deep/b.md'), 'hello\n');
    assert.equal(data.created, true);
    assert.equal(data.bytes, 6);
    assert.match(content, /^Created Notes\/new\/deep\/b\.md/);
    assert.deepEqual(box.changed, [join(box.vault, 'Notes/new/deep/b.md')]);
    assert.deepEqual(await readdir(join(box.vault, 'Notes/new/deep')), ['b.md']); // no temp file left
  });

  it('replaces a file keeping its mode, and refuses with create_only', async () => {
    await chmod(join(box.vault, 'Notes', 'a.md'), 0o600);
    const { data } = await box.call(writeTool, { path: 'Notes/a.md', content: 'new\n' });
    assert.equal(data.created, false);
    assert.equal(await read('Notes/a.md'), 'new\n');
    assert.equal((await stat(join(box.vault, 'Notes', 'a.md'))).mode & 0o777, 0o600);
    await refused(
      box.call(writeTool, { path: 'Notes/a.md', content: 'x', create_only: true }),
      'EXECUTION_FAILED',
      /already exists/,
    );
    assert.equal(await read('Notes/a.md'), 'new\n');
  });

  it('is dangerous, cautious in a scratch folder, and says whether it creates or replaces', async () => {
    const replace = await box.effects(writeTool, { path: 'Notes/a.md', content: 'x' });
    assert.equal(replace.safety, 'dangerous');
    assert.match(replace.reason ?? '', /replaces Notes\/a\.md/);
    const create = await box.effects(writeTool, { path: 'Notes/z.md', content: 'x' });
    assert.match(create.reason ?? '', /creates Notes\/z\.md/);
    const scratch = await box.effects(writeTool, { path: 'Scratch/z.md', content: 'x' });
    assert.equal(scratch.safety, 'cautious');
    assert.equal(scratch.readOnly, false);
    // A sibling whose name starts like the scratch folder is not in it.
    assert.equal(
      (await box.effects(writeTool, { path: 'Scratch2/z.md', content: 'x' })).safety,
      'dangerous',
    );
  });

  it('refuses a scratch write whose name became a link out of the scratch folder after its level was decided', async () => {
    await writeFile(join(box.vault, 'Scratch', 'x.md'), 'scratch\n');
    const args = { path: 'Scratch/x.md', content: 'overwritten\n' };
    assert.equal((await box.effects(writeTool, args)).safety, 'cautious');
    await rm(join(box.vault, 'Scratch', 'x.md'));
    await symlink(join(box.vault, 'Notes', 'a.md'), join(box.vault, 'Scratch', 'x.md'));
    await refused(box.call(writeTool, args), 'PERMISSION_DENIED', /now leads to Notes\/a\.md/);
    await refused(
      box.call(editFile, { path: 'Scratch/x.md', edits: [{ old_text: 'alpha', new_text: 'x' }] }),
      'PERMISSION_DENIED',
      /a link was swapped in/,
    );
    assert.equal(await read('Notes/a.md'), 'alpha\nbeta\ngamma\n');
  });

  it('previews a diff whose basis notices a change of the file', async () => {
    const preview = await box.preview(writeTool, {
      path: 'Notes/a.md',
      content: 'alpha\nBETA\ngamma\n',
    });
    assert.equal(preview.kind, 'diff');
    assert.match(preview.text, /^-beta$/m);
    assert.match(preview.text, /^\+BETA$/m);
    assert.deepEqual(await changedBasis(preview.basis), []);
    await writeFile(join(box.vault, 'Notes', 'a.md'), 'changed meanwhile\n');
    assert.deepEqual(await changedBasis(preview.basis), [join(box.vault, 'Notes', 'a.md')]);
    const fresh = await box.preview(writeTool, { path: 'Notes/fresh.md', content: 'x\n' });
    assert.deepEqual(fresh.basis, [{ path: join(box.vault, 'Notes', 'fresh.md'), sha256: null }]);
    await writeFile(join(box.vault, 'Notes', 'fresh.md'), 'someone was first\n');
    assert.equal((await changedBasis(fresh.basis)).length, 1);
  });

  it('tells the human in the preview when the call will be refused', async () => {
    const preview = await box.preview(writeTool, { path: 'Approved/mine.md', content: 'x' });
    assert.equal(preview.kind, 'text');
    assert.match(preview.text, /^This call will fail: .*belongs to vaultd/);
  });

  it('refuses content over max_write_bytes', async () => {
    const small = await makeSandbox({ max_write_bytes: 1024 });
    try {
      await refused(
        small.call(writeTool, { path: 'Notes/big.md', content: 'x'.repeat(2000) }),
        'INVALID_PARAMS',
        /max_write_bytes/,
      );
    } finally {
      await small.cleanup();
    }
  });
});

describe('edit_file', () => {
  it('applies exact replacements in order and returns the diff', async () => {
    const { data, content } = await box.call(editFile, {
      path: 'Notes/a.md',
      edits: [
        { old_text: 'beta', new_text: 'BETA' },
        { old_text: 'BETA\ngamma', new_text: 'BETA\ngamma\ndelta' },
      ],
    });
    assert.equal(await read('Notes/a.md'), 'alpha\nBETA\ngamma\ndelta\n');
    assert.equal(data.added_lines, 2);
    assert.equal(data.removed_lines, 1);
    assert.match(content, /^\+delta$/m);
    assert.deepEqual(box.changed, [join(box.vault, 'Notes', 'a.md')]);
  });

  it('refuses an edit that matches twice or never, naming it, and writes nothing', async () => {
    await writeFile(join(box.vault, 'Notes', 'a.md'), 'x = 1\nx = 1\ny = 2\n');
    await refused(
      box.call(editFile, {
        path: 'Notes/a.md',
        edits: [
          { old_text: 'y = 2', new_text: 'y = 3' },
          { old_text: 'x = 1', new_text: 'x = 2' },
        ],
      }),
      'EXECUTION_FAILED',
      /edit 2 \(old_text "x = 1"\) matches 2 times/,
    );
    await refused(
      box.call(editFile, { path: 'Notes/a.md', edits: [{ old_text: 'zzz', new_text: '' }] }),
      'EXECUTION_FAILED',
      /edit 1 .* matches nothing/,
    );
    assert.equal(await read('Notes/a.md'), 'x = 1\nx = 1\ny = 2\n');
    assert.deepEqual(box.changed, []);
  });

  it('shows the diff of a dry run without writing, as a safe read-only call', async () => {
    const args = {
      path: 'Notes/a.md',
      edits: [{ old_text: 'gamma', new_text: 'GAMMA' }],
      dry_run: true,
    };
    const effects = await box.effects(editFile, args);
    assert.deepEqual([effects.safety, effects.readOnly], ['safe', true]);
    const { data } = await box.call(editFile, args);
    assert.equal(data.dry_run, true);
    assert.match(data.diff, /^\+GAMMA$/m);
    assert.equal(await read('Notes/a.md'), 'alpha\nbeta\ngamma\n');
  });

  it('matches LF old_text in a CRLF file and keeps its line ends', async () => {
    await writeFile(join(box.vault, 'Notes', 'win.md'), 'one\r\ntwo\r\nthree\r\n');
    await box.call(editFile, {
      path: 'Notes/win.md',
      edits: [{ old_text: 'one\ntwo', new_text: 'one\n2' }],
    });
    assert.equal(await read('Notes/win.md'), 'one\r\n2\r\nthree\r\n');
  });

  it('previews a diff with a basis, or says the call will fail', async () => {
    const preview = await box.preview(editFile, {
      path: 'Notes/a.md',
      edits: [{ old_text: 'alpha', new_text: 'ALPHA' }],
    });
    assert.equal(preview.kind, 'diff');
    assert.match(preview.text, /^\+ALPHA$/m);
    assert.equal(preview.basis?.length, 1);
    const failing = await box.preview(editFile, {
      path: 'Notes/a.md',
      edits: [{ old_text: 'nope', new_text: '' }],
    });
    assert.match(failing.text, /will fail: edit 1/);
  });
});

describe('create_directory, copy_file, move_file, delete_file', () => {
  it('creates a folder with its parents, and again without error', async () => {
    assert.equal((await box.call(createDirectory, { path: 'Notes/x/y' })).data.created, true);
    assert.equal((await box.call(createDirectory, { path: 'Notes/x/y' })).data.created, false);
    await refused(
      box.call(createDirectory, { path: 'Notes/a.md' }),
      'EXECUTION_FAILED',
      /not a folder/,
    );
    assert.equal((await box.effects(createDirectory, { path: 'Notes/q' })).safety, 'cautious');
  });

  it('copies a file keeping its mode, never over a file unless overwrite', async () => {
    await chmod(join(box.vault, 'Notes', 'a.md'), 0o640);
    await box.call(copyFile, { source: 'Notes/a.md', destination: 'Notes/copy.md' });
    assert.equal(await read('Notes/copy.md'), 'alpha\nbeta\ngamma\n');
    assert.equal((await stat(join(box.vault, 'Notes', 'copy.md'))).mode & 0o777, 0o640);
    await writeFile(join(box.vault, 'Notes', 'other.md'), 'other\n');
    await refused(
      box.call(copyFile, { source: 'Notes/a.md', destination: 'Notes/other.md' }),
      'EXECUTION_FAILED',
      /overwrite: true/,
    );
    assert.equal(await read('Notes/other.md'), 'other\n');
    const preview = await box.preview(copyFile, {
      source: 'Notes/a.md',
      destination: 'Notes/other.md',
      overwrite: true,
    });
    assert.equal(preview.kind, 'diff');
    assert.equal(preview.basis?.length, 2);
    await box.call(copyFile, {
      source: 'Notes/a.md',
      destination: 'Notes/other.md',
      overwrite: true,
    });
    assert.equal(await read('Notes/other.md'), 'alpha\nbeta\ngamma\n');
    await refused(
      box.call(copyFile, { source: 'Notes', destination: 'Notes2' }),
      'EXECUTION_FAILED',
      /copy_file copies files/,
    );
  });

  it('moves a file and a folder, never over anything unless overwrite, never into itself', async () => {
    await box.call(moveFile, { source: 'Notes/a.md', destination: 'Notes/renamed.md' });
    assert.equal(existsSync(join(box.vault, 'Notes', 'a.md')), false);
    assert.equal(await read('Notes/renamed.md'), 'alpha\nbeta\ngamma\n');
    await writeFile(join(box.vault, 'Notes', 'taken.md'), 'taken\n');
    await refused(
      box.call(moveFile, { source: 'Notes/renamed.md', destination: 'Notes/taken.md' }),
      'EXECUTION_FAILED',
      /already exists/,
    );
    assert.equal(await read('Notes/taken.md'), 'taken\n');
    await box.call(moveFile, {
      source: 'Notes/renamed.md',
      destination: 'Notes/taken.md',
      overwrite: true,
    });
    assert.equal(await read('Notes/taken.md'), 'alpha\nbeta\ngamma\n');
    await mkdir(join(box.vault, 'Folder', 'inner'), { recursive: true });
    await writeFile(join(box.vault, 'Folder', 'inner', 'f.md'), 'f\n');
    await mkdir(join(box.vault, 'EmptyTarget'));
    await refused(
      box.call(moveFile, { source: 'Folder', destination: 'EmptyTarget' }),
      'EXECUTION_FAILED',
      /is a folder/,
    );
    await refused(
      box.call(moveFile, { source: 'Folder', destination: 'Folder/inner/x' }),
      'EXECUTION_FAILED',
      /into itself/,
    );
    await box.call(moveFile, { source: 'Folder', destination: 'Moved' });
    assert.equal(await read('Moved/inner/f.md'), 'f\n');
    const preview = await box.preview(moveFile, {
      source: 'Notes/taken.md',
      destination: 'Notes/t2.md',
    });
    assert.match(preview.text, /Move the file Notes\/taken\.md to Notes\/t2\.md/);
  });

  it('deletes a file, an empty folder, and a full folder only with recursive', async () => {
    const preview = await box.preview(deleteFile, { path: 'Notes/a.md' });
    assert.equal(preview.kind, 'diff');
    assert.match(preview.text, /^-alpha$/m);
    await box.call(deleteFile, { path: 'Notes/a.md' });
    assert.equal(existsSync(join(box.vault, 'Notes', 'a.md')), false);
    await mkdir(join(box.vault, 'Tree', 'sub'), { recursive: true });
    await writeFile(join(box.vault, 'Tree', 'sub', 'leaf.md'), 'leaf\n');
    await symlink(box.outside, join(box.vault, 'Tree', 'link-out'));
    await refused(box.call(deleteFile, { path: 'Tree' }), 'EXECUTION_FAILED', /recursive: true/);
    const tree = await box.preview(deleteFile, { path: 'Tree', recursive: true });
    assert.match(tree.text, /- sub\/leaf\.md/);
    assert.equal(tree.basis?.length, 1);
    const { data } = await box.call(deleteFile, { path: 'Tree', recursive: true });
    assert.equal(data.removed, 4);
    assert.equal(existsSync(join(box.vault, 'Tree')), false);
    assert.equal(await readFile(join(box.outside, 'secret.txt'), 'utf8'), 'outside secret\n');
    await mkdir(join(box.vault, 'Empty'));
    await box.call(deleteFile, { path: 'Empty' });
    assert.equal(existsSync(join(box.vault, 'Empty')), false);
    await refused(box.call(deleteFile, { path: 'Nope.md' }), 'EXECUTION_FAILED', /does not exist/);
  });

  it('refuses to move or delete a root itself', async () => {
    await refused(
      box.call(deleteFile, { path: '.', recursive: true }),
      'PERMISSION_DENIED',
      /root folder vault itself/,
    );
    await refused(
      box.call(moveFile, { source: '.', destination: 'x' }),
      'PERMISSION_DENIED',
      /root folder/,
    );
    // The human asked about it is told so by the preview, as the handler would refuse it.
    const preview = await box.preview(moveFile, { source: '.', destination: 'x' });
    assert.ok(preview.kind === 'text' && /will fail: .*root folder/.test(preview.text));
    assert.equal(existsSync(join(box.vault, 'Notes', 'a.md')), true);
  });
});
