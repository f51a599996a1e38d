/* eslint-disable @typescript-eslint/no-explicit-any -- results carry JSON data of many shapes */
// Hostile paths against every filesystem tool: `..`, absolute paths, links pointing out (read
// and write), a link swapped in between the check and the use (at the last component and at a
// folder above it), a sibling folder whose name starts with the root's (CVE-2025-53110), links
// whose target only looks inside (CVE-2025-53109), vaultd's own folders, NUL bytes, read-only
// roots. After each attack, the files outside are as they were.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import {
  link,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import type { Tool } from '../../../src/protocol/types.ts';
import { fileInfo, listDirectory } from '../../../src/tools/filesystem/browse.ts';
import { FILESYSTEM_TOOLS } from '../../../src/tools/filesystem/index.ts';
import { copyFile, deleteFile, moveFile } from '../../../src/tools/filesystem/change.ts';
import { readFile as readTool } from '../../../src/tools/filesystem/read-file.ts';
import { searchFiles } from '../../../src/tools/filesystem/search.ts';
import {
  createDirectory,
  editFile,
  writeFile as writeTool,
} from '../../../src/tools/filesystem/write.ts';
import { makeSandbox, refused, type FsSandbox } from './helpers.ts';

/** Every way a tool could be pointed at a path, to read it or to write it. */
function readCalls(path: string): [Tool<any>, Record<string, unknown>][] {
  return [
    [readTool, { path }],
    [listDirectory, { path }],
    [fileInfo, { path }],
    [searchFiles, { pattern: '*', path, content: 'secret' }],
    [copyFile, { source: path, destination: 'Notes/stolen.txt' }],
    [editFile, { path, edits: [{ old_text: 'secret', new_text: 'x' }], dry_run: true }],
  ];
}
function writeCalls(path: string): [Tool<any>, Record<string, unknown>][] {
  return [
    [writeTool, { path, content: 'pwned\n' }],
    [editFile, { path, edits: [{ old_text: 'secret', new_text: 'pwned' }] }],
    [createDirectory, { path }],
    [copyFile, { source: 'Notes/a.md', destination: path, overwrite: true }],
    [moveFile, { source: 'Notes/a.md', destination: path, overwrite: true }],
    [moveFile, { source: path, destination: 'Notes/taken.md' }],
    [deleteFile, { path, recursive: true }],
  ];
}

describe('path escapes', () => {
  let box: FsSandbox;
  let snapshot: string;
  const outsideState = async (): Promise<string> => {
    const out: string[] = [];
    for (const dir of [box.outside, join(box.base, 'vault2')]) {
      for (const name of (await readdir(dir)).sort()) {
        out.push(`${name}=${await readFile(join(dir, name), 'utf8')}`);
      }
    }
    return out.join('|');
  };
  before(async () => {
    box = await makeSandbox({}, (base) => [
      { name: 'shared', path: join(base, 'shared'), writable: false },
    ]);
    await writeFile(join(box.vault, 'Notes', 'a.md'), 'a secret\n');
    await mkdir(join(box.base, 'shared'));
    await writeFile(join(box.base, 'shared', 'doc.txt'), 'shared doc\n');
    await mkdir(join(box.base, 'shared-evil'));
    await writeFile(join(box.base, 'shared-evil', 'x.txt'), 'evil\n');
    // Links inside the vault pointing out, to a folder and to a file.
    await symlink(box.outside, join(box.vault, 'Notes', 'out-dir'));
    await symlink(join(box.outside, 'secret.txt'), join(box.vault, 'Notes', 'out-file'));
    // CVE-2025-53109: a link whose target merely starts with the vault's path.
    await symlink(join(box.base, 'vault2'), join(box.vault, 'Notes', 'to-vault2'));
    await symlink(join(box.base, 'vault2', 'sibling.txt'), join(box.vault, 'Notes', 'to-sibling'));
    // Links to vaultd's folders.
    await symlink(join(box.vault, 'In_Progress'), join(box.vault, 'Notes', 'to-in-progress'));
    await symlink(join(box.vault, '.vaultd'), join(box.vault, 'Notes', 'to-state'));
    await symlink(join(box.vault, 'Dashboard.md'), join(box.vault, 'Notes', 'to-dashboard'));
    // A loop.
    await symlink(join(box.vault, 'Notes', 'loop-b'), join(box.vault, 'Notes', 'loop-a'));
    await symlink(join(box.vault, 'Notes', 'loop-a'), join(box.vault, 'Notes', 'loop-b'));
    await writeFile(join(box.vault, 'Notes', 'taken.md'), 'taken\n');
    snapshot = await outsideState();
  });
  after(() => box.cleanup());
  afterEach(async () => {
    assert.equal(await outsideState(), snapshot, 'a file outside the roots changed');
    assert.equal(existsSync(join(box.vault, 'Notes', 'stolen.txt')), false);
  });

  const outsidePaths = (): string[] => [
    '../outside/secret.txt',
    'Notes/../../outside/secret.txt',
    '..',
    join(box.outside, 'secret.txt'),
    '/etc/passwd',
    '/etc',
    // CVE-2025-53110: a sibling whose name starts with the root's name.
    '../vault2/sibling.txt',
    join(box.base, 'vault2', 'sibling.txt'),
    join(box.base, 'vault2'),
    join(box.base, 'shared-evil', 'x.txt'),
    // Links pointing out (CVE-2025-53109 pattern included).
    'Notes/out-dir/secret.txt',
    'Notes/out-dir',
    'Notes/out-file',
    'Notes/to-vault2/sibling.txt',
    'Notes/to-sibling',
    'Notes/out-dir/new-file.txt',
    'Notes/out-dir/new/deep/file.txt',
  ];

  it('refuses every read of a path outside the roots', async () => {
    for (const path of outsidePaths()) {
      for (const [tool, args] of readCalls(path)) {
        await refused(box.call(tool, args), 'PERMISSION_DENIED', /outside the folders/).catch(
          (error: Error) => {
            throw new Error(`${tool.name} ${JSON.stringify(args)}: ${error.message}`);
          },
        );
      }
    }
  });

  it('refuses every write to a path outside the roots', async () => {
    for (const path of outsidePaths()) {
      for (const [tool, args] of writeCalls(path)) {
        await refused(box.call(tool, args), 'PERMISSION_DENIED').catch((error: Error) => {
          throw new Error(`${tool.name} ${JSON.stringify(args)}: ${error.message}`);
        });
      }
    }
    assert.equal(await readFile(join(box.vault, 'Notes', 'a.md'), 'utf8'), 'a secret\n');
  });

  it("refuses writes into vaultd's folders, its state, the editor's folders and Dashboard.md", async () => {
    const protectedPaths = [
      'In_Progress/x.md',
      'In_Progress',
      'Pending_Approval/x.md',
      'Approved/my-own-note.md',
      'Rejected/x.md',
      'Done/x.md',
      'Failed/x.md',
      'Logs/2026-01-01.jsonl',
      'Needs_Action/x.md',
      '.vaultd/state.json',
      '.vaultd/new',
      '.obsidian/app.json',
      '.git/config',
      '.git/hooks/pre-commit',
      '.trash/x.md',
      'Dashboard.md',
      './In_Progress/../In_Progress/x.md',
      'Notes/../Approved/x.md',
      'In_Progress/',
      join(box.vault, 'Approved', 'x.md'),
      'Notes/to-in-progress/x.md',
      'Notes/to-dashboard',
      'Notes/to-state/state.json',
    ];
    for (const path of protectedPaths) {
      for (const [tool, args] of writeCalls(path)) {
        await refused(box.call(tool, args), 'PERMISSION_DENIED').catch((error: Error) => {
          throw new Error(`${tool.name} ${JSON.stringify(args)}: ${error.message}`);
        });
      }
    }
    assert.equal(await readFile(join(box.vault, 'Dashboard.md'), 'utf8'), '# Dashboard\n');
    assert.deepEqual(await readdir(join(box.vault, 'Approved')), []);
    assert.equal(existsSync(join(box.vault, 'Notes', 'a.md')), true);
  });

  it("refuses writes into a repository's .git at any depth, folder or file, however the path is spelled", async () => {
    // A scratch repository: a hook or core.fsmonitor written there runs when a person next uses git.
    const repo = join(box.vault, 'Scratch', 'proj');
    await mkdir(join(repo, '.git', 'hooks'), { recursive: true });
    await writeFile(join(repo, '.git', 'config'), '[core]\n');
    await writeFile(join(repo, 'readme.md'), 'secret\n');
    // A linked worktree or submodule: `.git` is a file naming the git folder.
    await mkdir(join(box.vault, 'Scratch', 'wt'));
    await writeFile(join(box.vault, 'Scratch', 'wt', '.git'), `gitdir: ${join(repo, '.git')}\n`);
    await symlink(join(repo, '.git'), join(box.vault, 'Notes', 'to-git'));
    await symlink(join(repo, '.git', 'hooks'), join(box.vault, 'Notes', 'hooks-dir'));
    try {
      const paths = [
        'Scratch/proj/.git/hooks/pre-commit',
        'Scratch/proj/.git/config',
        'Scratch/proj/.git',
        'Scratch/proj/.git/',
        'Scratch/proj/./.git/hooks/post-checkout',
        'Scratch/other/../proj/.git/hooks/pre-commit',
        join(repo, '.git', 'hooks', 'pre-commit'),
        'Scratch/proj/.GIT/hooks/pre-commit',
        'Scratch/new/.git/config',
        'Scratch/wt/.git',
        'Notes/to-git/hooks/pre-commit',
        'Notes/hooks-dir/pre-commit',
        'deep/a/b/c/.git/HEAD',
        '.git/config',
      ];
      for (const path of paths) {
        for (const [tool, args] of writeCalls(path)) {
          await refused(
            box.call(tool, args),
            'PERMISSION_DENIED',
            /\.git.*no tool may change/i,
          ).catch((error: Error) => {
            throw new Error(`${tool.name} ${JSON.stringify(args)}: ${error.message}`);
          });
        }
      }
      // A folder holding a repository is not moved or deleted whole either.
      await refused(
        box.call(deleteFile, { path: 'Scratch', recursive: true }),
        'PERMISSION_DENIED',
      );
      await refused(
        box.call(moveFile, { source: 'Scratch/proj', destination: 'Notes/proj' }),
        'PERMISSION_DENIED',
      );
      assert.deepEqual(await readdir(join(repo, '.git', 'hooks')), []);
      assert.equal(await readFile(join(repo, '.git', 'config'), 'utf8'), '[core]\n');
      assert.equal(existsSync(join(box.vault, 'Scratch', 'new')), false);
      // Reads stay allowed, and so do writes beside the .git folder and names that only look like it.
      assert.equal(
        (await box.call(readTool, { path: 'Scratch/proj/.git/config' })).content,
        '[core]\n',
      );
      await box.call(writeTool, { path: 'Scratch/proj/src/main.ts', content: 'x\n' });
      await box.call(writeTool, { path: 'Scratch/proj/.gitignore', content: 'dist\n' });
      await box.call(writeTool, { path: 'Scratch/proj/notes.git/x', content: 'x\n' });
      await box.call(writeTool, { path: 'Scratch/proj/.git-notes/x', content: 'x\n' });
    } finally {
      await rm(join(box.vault, 'Scratch'), { recursive: true, force: true });
      await rm(join(box.vault, 'Notes', 'to-git'));
      await rm(join(box.vault, 'Notes', 'hooks-dir'));
    }
  });

  it('refuses writes into git folders of any name and writes that would make one (a HEAD)', async () => {
    // git takes any folder holding HEAD, objects/ and refs/ for a repository (a bare backup.git, a
    // --separate-git-dir folder named by a .git file), and a person's git in it runs its config;
    // git_push to it as a local remote, or a person's push, runs its hooks.
    const scratch = join(box.vault, 'Scratch');
    const bare = join(scratch, 'backup.git');
    for (const dir of ['hooks', 'objects', 'refs/heads']) {
      await mkdir(join(bare, dir), { recursive: true });
    }
    await writeFile(join(bare, 'HEAD'), 'ref: refs/heads/main\n');
    await writeFile(join(bare, 'config'), '[core]\n\tbare = true\n');
    const store = join(scratch, 'proj.store');
    await mkdir(join(store, 'objects'), { recursive: true });
    await mkdir(join(store, 'refs'));
    await writeFile(join(store, 'HEAD'), 'ref: refs/heads/main\n');
    await mkdir(join(scratch, 'proj'));
    await writeFile(join(scratch, 'proj', '.git'), `gitdir: ${store}\n`);
    await symlink(bare, join(box.vault, 'Notes', 'to-bare'));
    // Half a repository, as an agent would build one file by file: all but HEAD.
    const half = join(scratch, 'evil');
    await mkdir(join(half, 'objects'), { recursive: true });
    await mkdir(join(half, 'refs'));
    await writeFile(join(half, 'config'), '[core]\n');
    try {
      const paths = [
        'Scratch/backup.git/hooks/post-receive',
        'Scratch/backup.git/config',
        'Scratch/backup.git',
        'Scratch/other/../backup.git/hooks/pre-receive',
        join(bare, 'hooks', 'update'),
        'Notes/to-bare/hooks/post-update',
        'Scratch/proj.store/hooks/pre-commit',
        'Scratch/proj.store/config',
        'Scratch/evil/HEAD',
        'Scratch/evil/head',
        'Scratch/fresh/HEAD',
        'HEAD',
      ];
      for (const path of paths) {
        for (const [tool, args] of writeCalls(path)) {
          await refused(box.call(tool, args), 'PERMISSION_DENIED', /HEAD/).catch((error: Error) => {
            throw new Error(`${tool.name} ${JSON.stringify(args)}: ${error.message}`);
          });
        }
      }
      // A folder holding a git folder is not moved or deleted whole, nor one moved in as HEAD.
      await refused(
        box.call(moveFile, { source: 'Scratch', destination: 'Notes/s' }),
        'PERMISSION_DENIED',
      );
      await mkdir(join(box.vault, 'Notes', 'h'));
      await refused(
        box.call(moveFile, { source: 'Notes/h', destination: 'Scratch/evil/HEAD' }),
        'PERMISSION_DENIED',
      );
      assert.deepEqual(await readdir(join(bare, 'hooks')), []);
      assert.deepEqual((await readdir(store)).sort(), ['HEAD', 'objects', 'refs']);
      assert.equal(existsSync(join(half, 'HEAD')), false);
      assert.equal(existsSync(join(scratch, 'fresh')), false);
      // Reads stay allowed; so do writes beside git folders and into folders without HEAD.
      assert.equal(
        (await box.call(readTool, { path: 'Scratch/backup.git/config' })).content,
        '[core]\n\tbare = true\n',
      );
      await box.call(writeTool, { path: 'Scratch/notes.git/x.md', content: 'x\n' });
      await box.call(writeTool, { path: 'Scratch/proj/readme.md', content: 'x\n' });
      await box.call(writeTool, { path: 'Scratch/HEADLINES.md', content: 'x\n' });
    } finally {
      await rm(scratch, { recursive: true, force: true });
      await rm(join(box.vault, 'Notes', 'to-bare'));
      await rm(join(box.vault, 'Notes', 'h'), { recursive: true, force: true });
    }
  });

  it("refuses reads of vaultd's state, and leaves it out of searches", async () => {
    for (const path of [
      '.vaultd/state.json',
      '.vaultd',
      'Notes/to-state/state.json',
      'Notes/to-state',
    ]) {
      for (const [tool, args] of readCalls(path)) {
        await refused(box.call(tool, args), 'PERMISSION_DENIED', /belongs to vaultd/);
      }
    }
    const { data } = await box.call(searchFiles, { pattern: '*', content: 'state' });
    assert.deepEqual(data.matches, []);
    const names = await box.call(searchFiles, { pattern: '**/state.json' });
    assert.deepEqual(names.data.matches, []);
  });

  it('refuses NUL bytes and other control characters in paths', async () => {
    for (const path of [
      'Notes/a.md\u0000.txt',
      'Notes/a.md\n../../outside/secret.txt',
      'Notes/\u001b[2Ja.md',
      'Notes/a\u0085.md',
    ]) {
      for (const [tool, args] of [...readCalls(path), ...writeCalls(path)]) {
        await refused(box.call(tool, args), 'INVALID_PARAMS', /control character/);
      }
    }
  });

  it('takes odd Unicode, encoded dots and backslashes as names inside the vault, never as a way out', async () => {
    for (const path of [
      '\uff0e\uff0e/outside/x.txt',
      '%2e%2e/outside/x.txt',
      '..\\outside\\x.txt',
      '\u2025/x.txt',
      'Notes/\u202e/txt.exe',
    ]) {
      await box.call(writeTool, { path, content: 'inside\n' });
      assert.equal(await readFile(join(box.vault, path), 'utf8'), 'inside\n');
      assert.equal((await box.call(readTool, { path })).content, 'inside\n');
      await box.call(deleteFile, { path });
    }
    assert.deepEqual(await readdir(box.outside), ['secret.txt']);
  });

  it('reads a read-only root and refuses writes to it', async () => {
    const shared = join(box.base, 'shared', 'doc.txt');
    assert.equal((await box.call(readTool, { path: shared })).content, 'shared doc\n');
    for (const [tool, args] of writeCalls(shared)) {
      await refused(box.call(tool, args), 'PERMISSION_DENIED', /read-only/);
    }
    assert.equal(await readFile(shared, 'utf8'), 'shared doc\n');
  });

  it('refuses to read a file with another hard link, which may be outside the roots', async () => {
    await link(join(box.outside, 'secret.txt'), join(box.vault, 'Notes', 'hard.txt'));
    try {
      for (const [tool, args] of [
        [readTool, { path: 'Notes/hard.txt' }],
        [copyFile, { source: 'Notes/hard.txt', destination: 'Notes/stolen.txt' }],
        [editFile, { path: 'Notes/hard.txt', edits: [{ old_text: 'secret', new_text: 'x' }] }],
      ] as [Tool<any>, Record<string, unknown>][]) {
        await refused(box.call(tool, args), 'PERMISSION_DENIED', /other hard link/);
      }
      const found = await box.call(searchFiles, {
        pattern: '*',
        path: 'Notes',
        content: 'outside',
      });
      assert.deepEqual(found.data.matches, []);
    } finally {
      await unlink(join(box.vault, 'Notes', 'hard.txt'));
    }
  });

  it('refuses a loop of links', async () => {
    await refused(box.call(readTool, { path: 'Notes/loop-a' }), 'PERMISSION_DENIED', /loop/);
    await refused(
      box.call(writeTool, { path: 'Notes/loop-a', content: 'x' }),
      'PERMISSION_DENIED',
      /loop/,
    );
  });

  it('searches and lists without following links out of the vault', async () => {
    const found = await box.call(searchFiles, { pattern: '*', path: 'Notes', content: 'secret' });
    assert.deepEqual(
      found.data.matches.map((m: any) => m.path),
      ['Notes/a.md'],
    );
    const listed = await box.call(listDirectory, { path: 'Notes', recursive: true });
    assert.ok(!listed.data.entries.some((e: any) => e.path.includes('secret')));
    assert.equal(listed.data.entries.find((e: any) => e.path === 'out-dir')?.type, 'symlink');
  });
});

describe("the pack's own protected paths (vaultd's config file in the vault)", () => {
  it('refuses every write to vaultd.yaml and to configured paths, however named, and reads them', async () => {
    const box = await makeSandbox({ protected: ['vaultd.yaml', 'Plugins'] });
    try {
      await writeFile(join(box.vault, 'vaultd.yaml'), 'vault: .\n');
      await mkdir(join(box.vault, 'Plugins'));
      await writeFile(join(box.vault, 'Notes', 'a.md'), 'a secret\n');
      await writeFile(join(box.vault, 'Notes', 'taken.md'), 'taken\n');
      await symlink(join(box.vault, 'vaultd.yaml'), join(box.vault, 'Notes', 'config-link'));
      const tools = new Map(FILESYSTEM_TOOLS.map((t) => [t.name, t]));
      for (const path of [
        'vaultd.yaml',
        './Notes/../vaultd.yaml',
        join(box.vault, 'vaultd.yaml'),
        'Notes/config-link',
        'Plugins/evil.ts',
      ]) {
        for (const [tool, args] of writeCalls(path)) {
          const wrapped = tools.get(tool.name) as Tool<any>;
          await refused(
            box.call(wrapped, args),
            'PERMISSION_DENIED',
            /protected in this vault's config/,
          ).catch((error: Error) => {
            throw new Error(`${tool.name} ${JSON.stringify(args)}: ${error.message}`);
          });
        }
      }
      assert.equal(await readFile(join(box.vault, 'vaultd.yaml'), 'utf8'), 'vault: .\n');
      assert.deepEqual(await readdir(join(box.vault, 'Plugins')), []);
      const read = await box.call(tools.get('read_file') as Tool<any>, { path: 'vaultd.yaml' });
      assert.equal(read.content, 'vault: .\n');
      const effects = await box.effects(tools.get('write_file') as Tool<any>, {
        path: 'vaultd.yaml',
        content: 'x',
      });
      assert.equal(effects.safety, 'dangerous');
      const preview = await box.preview(tools.get('write_file') as Tool<any>, {
        path: 'vaultd.yaml',
        content: 'x',
      });
      assert.match(preview.text, /will fail: .*protected/);
    } finally {
      await box.cleanup();
    }
  });
});

describe('a link swapped in between the check and the use', () => {
  let box: FsSandbox;
  beforeEach(async () => {
    box = await makeSandbox();
    await mkdir(join(box.vault, 'Notes', 'sub'));
    await writeFile(join(box.vault, 'Notes', 'sub', 'target.md'), 'inside\n');
  });
  afterEach(async () => {
    assert.equal(await readFile(join(box.outside, 'secret.txt'), 'utf8'), 'outside secret\n');
    assert.deepEqual(await readdir(box.outside), ['secret.txt']);
    await box.cleanup();
  });

  /** Replace the last component by a link to the outside secret, once, after the check. */
  const swapFile = (rel: string) => {
    let done = false;
    return async (): Promise<void> => {
      if (done) return;
      done = true;
      await unlink(join(box.vault, rel)).catch(() => undefined);
      await symlink(join(box.outside, 'secret.txt'), join(box.vault, rel));
    };
  };
  /** Replace the folder `Notes/sub` by a link to the outside folder, once, after the check. */
  const swapFolder = () => {
    let done = false;
    return async (): Promise<void> => {
      if (done) return;
      done = true;
      await rename(join(box.vault, 'Notes', 'sub'), join(box.vault, 'Notes', 'sub-moved'));
      await symlink(box.outside, join(box.vault, 'Notes', 'sub'));
    };
  };

  it('write_file replaces the link swapped in at the name, never writes through it', async () => {
    await box.call(
      writeTool,
      { path: 'Notes/sub/target.md', content: 'new\n' },
      swapFile('Notes/sub/target.md'),
    );
    assert.equal(await readFile(join(box.vault, 'Notes', 'sub', 'target.md'), 'utf8'), 'new\n');
  });

  it('read_file and edit_file refuse a link swapped in at the name', async () => {
    await refused(
      box.call(readTool, { path: 'Notes/sub/target.md' }, swapFile('Notes/sub/target.md')),
      'PERMISSION_DENIED',
      /symbolic link/,
    );
    await rm(join(box.vault, 'Notes', 'sub', 'target.md'));
    await writeFile(join(box.vault, 'Notes', 'sub', 'target.md'), 'inside\n');
    await refused(
      box.call(
        editFile,
        { path: 'Notes/sub/target.md', edits: [{ old_text: 'secret', new_text: 'pwned' }] },
        swapFile('Notes/sub/target.md'),
      ),
      'PERMISSION_DENIED',
      /symbolic link/,
    );
  });

  it('every tool refuses when a folder above the path became a link to the outside', async () => {
    const calls: [Tool<any>, Record<string, unknown>][] = [
      [readTool, { path: 'Notes/sub/secret.txt' }],
      [writeTool, { path: 'Notes/sub/secret.txt', content: 'pwned\n' }],
      [writeTool, { path: 'Notes/sub/new.txt', content: 'planted\n' }],
      [
        editFile,
        { path: 'Notes/sub/secret.txt', edits: [{ old_text: 'secret', new_text: 'pwned' }] },
      ],
      [deleteFile, { path: 'Notes/sub/secret.txt' }],
      [copyFile, { source: 'Notes/sub/secret.txt', destination: 'Notes/stolen.txt' }],
      [moveFile, { source: 'Notes/sub/secret.txt', destination: 'Notes/stolen.txt' }],
      [listDirectory, { path: 'Notes/sub' }],
    ];
    for (const [tool, args] of calls) {
      // The path is checked while Notes/sub is a real folder (secret.txt planted there, so it exists).
      await writeFile(join(box.vault, 'Notes', 'sub', 'secret.txt'), 'decoy\n');
      await refused(
        box.call(tool, args, swapFolder()),
        'PERMISSION_DENIED',
        /changed while the call ran/,
      ).catch((error: Error) => {
        throw new Error(`${tool.name}: ${error.message}`);
      });
      await unlink(join(box.vault, 'Notes', 'sub'));
      await rename(join(box.vault, 'Notes', 'sub-moved'), join(box.vault, 'Notes', 'sub'));
    }
    assert.equal(existsSync(join(box.vault, 'Notes', 'stolen.txt')), false);
  });

  it('every tool refuses when a folder two levels above the path became a link', async () => {
    const elsewhere = join(box.base, 'elsewhere');
    await mkdir(join(elsewhere, 'deeper'), { recursive: true });
    await writeFile(join(elsewhere, 'deeper', 'secret.txt'), 'far secret\n');
    await mkdir(join(box.vault, 'Notes', 'sub', 'deeper'));
    const calls: [Tool<any>, Record<string, unknown>][] = [
      [readTool, { path: 'Notes/sub/deeper/secret.txt' }],
      [writeTool, { path: 'Notes/sub/deeper/secret.txt', content: 'pwned\n' }],
      [writeTool, { path: 'Notes/sub/deeper/new.txt', content: 'planted\n' }],
      [
        editFile,
        { path: 'Notes/sub/deeper/secret.txt', edits: [{ old_text: 'secret', new_text: 'pwned' }] },
      ],
      [deleteFile, { path: 'Notes/sub/deeper/secret.txt' }],
      [deleteFile, { path: 'Notes/sub/deeper', recursive: true }],
      [copyFile, { source: 'Notes/sub/deeper/secret.txt', destination: 'Notes/stolen.txt' }],
      [moveFile, { source: 'Notes/sub/deeper/secret.txt', destination: 'Notes/stolen.txt' }],
      [listDirectory, { path: 'Notes/sub/deeper' }],
      [searchFiles, { pattern: '*', path: 'Notes/sub/deeper', content: 'secret' }],
    ];
    for (const [tool, args] of calls) {
      await writeFile(join(box.vault, 'Notes', 'sub', 'deeper', 'secret.txt'), 'decoy\n');
      let done = false;
      const swap = async (): Promise<void> => {
        if (done) return;
        done = true;
        await rename(join(box.vault, 'Notes', 'sub'), join(box.vault, 'Notes', 'sub-moved'));
        await symlink(elsewhere, join(box.vault, 'Notes', 'sub'));
      };
      await refused(
        box.call(tool, args, swap),
        'PERMISSION_DENIED',
        /changed while the call ran/,
      ).catch((error: Error) => {
        throw new Error(`${tool.name}: ${error.message}`);
      });
      await unlink(join(box.vault, 'Notes', 'sub'));
      await rename(join(box.vault, 'Notes', 'sub-moved'), join(box.vault, 'Notes', 'sub'));
    }
    assert.deepEqual(await readdir(join(elsewhere, 'deeper')), ['secret.txt']);
    assert.equal(await readFile(join(elsewhere, 'deeper', 'secret.txt'), 'utf8'), 'far secret\n');
    assert.equal(existsSync(join(box.vault, 'Notes', 'stolen.txt')), false);
  });
});
