import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ToolError } from '../../src/protocol/errors.ts';
import { createVaultAccess, type SharedAccess } from '../../src/vault/access.ts';

describe('VaultAccess: paths confined to roots on their real paths', () => {
  let base: string;
  let vault: string;
  let access: SharedAccess;
  before(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-access-')));
    vault = join(base, 'vault');
    await mkdir(join(vault, 'Notes', 'deep'), { recursive: true });
    await mkdir(join(vault, '.vaultd'), { recursive: true });
    await mkdir(join(vault, 'Done'), { recursive: true });
    await mkdir(join(base, 'vault2'), { recursive: true });
    await mkdir(join(base, 'outside'), { recursive: true });
    await mkdir(join(base, 'extra'), { recursive: true });
    await writeFile(join(vault, 'Notes', 'a.md'), 'a');
    await writeFile(join(base, 'outside', 'secret.txt'), 'secret');
    await writeFile(join(base, 'vault2', 'x.md'), 'x');
    await symlink(join(base, 'outside'), join(vault, 'Notes', 'link-out'));
    await symlink(join(base, 'outside', 'secret.txt'), join(vault, 'Notes', 'secret-link.txt'));
    await symlink(join(vault, 'Notes', 'deep'), join(vault, 'Notes', 'link-in'));
    await symlink(join(vault, '.vaultd'), join(vault, 'Notes', 'state-link'));
    await symlink('loop-b', join(vault, 'Notes', 'loop-a'));
    await symlink('loop-a', join(vault, 'Notes', 'loop-b'));
    access = await createVaultAccess({
      roots: [
        { name: 'vault', path: vault, writable: true },
        { name: 'extra', path: join(base, 'extra'), writable: false },
      ],
      protectedForWrite: [join(vault, '.vaultd'), join(vault, 'Done')],
      protectedForRead: [join(vault, '.vaultd')],
    });
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  const refused = async (path: string, mode: 'read' | 'write', code: string): Promise<void> => {
    await assert.rejects(access.resolve(path, mode), (error: unknown) => {
      assert.ok(error instanceof ToolError, String(error));
      assert.equal(error.code, code, `${path}: ${error.message}`);
      return true;
    });
  };

  it('resolves paths inside the vault, relative or absolute, existing or not', async () => {
    const a = await access.resolve('Notes/a.md', 'read');
    assert.equal(a.path, join(vault, 'Notes', 'a.md'));
    assert.equal(a.relative, 'Notes/a.md');
    assert.equal(a.exists, true);
    assert.equal(access.display(a), 'Notes/a.md');
    const fresh = await access.resolve(join(vault, 'Notes', 'new', 'b.md'), 'write');
    assert.equal(fresh.exists, false);
    assert.equal(fresh.relative, 'Notes/new/b.md');
    assert.equal((await access.resolve('.', 'read')).relative, '.');
    const viaLink = await access.resolve('Notes/link-in/c.md', 'write');
    assert.equal(viaLink.path, join(vault, 'Notes', 'deep', 'c.md'), 'a link inside stays inside');
  });

  const escapes: [string, string][] = [
    ['../outside/secret.txt', 'parent traversal'],
    ['Notes/../../outside/secret.txt', 'traversal through a folder'],
    ['/etc/passwd', 'an absolute path elsewhere'],
    ['Notes/link-out/secret.txt', 'a folder link pointing out'],
    ['Notes/secret-link.txt', 'a file link pointing out'],
    ['Notes/link-out/new.txt', 'a new file under a link pointing out'],
    ['../vault2/x.md', 'a sibling whose name starts like the vault'],
  ];
  for (const [path, what] of escapes) {
    it(`refuses ${what}: ${path}`, async () => {
      await refused(path, 'read', 'PERMISSION_DENIED');
      await refused(path, 'write', 'PERMISSION_DENIED');
    });
  }

  it('refuses the sibling prefix as an absolute path too', async () => {
    await refused(join(base, 'vault2', 'x.md'), 'read', 'PERMISSION_DENIED');
  });

  it('refuses NUL bytes, control characters and empty paths as invalid', async () => {
    await refused('Notes/a.md\u0000.txt', 'read', 'INVALID_PARAMS');
    await refused('Notes/a\nb.md', 'write', 'INVALID_PARAMS');
    await refused('', 'read', 'INVALID_PARAMS');
    await refused('   ', 'read', 'INVALID_PARAMS');
  });

  it("says plainly which of vaultd's paths a refused path is, or is in", async () => {
    const messageOf = async (path: string, mode: 'read' | 'write'): Promise<string> =>
      access.resolve(path, mode).then(
        () => assert.fail(`${path} was not refused`),
        (error: unknown) => (error as Error).message,
      );
    assert.equal(
      await messageOf('.vaultd', 'read'),
      '.vaultd belongs to vaultd (or the editor): no tool may read it',
    );
    assert.equal(
      await messageOf('Done/old.md', 'write'),
      'Done/old.md is in Done, which belongs to vaultd (or the editor): no tool may change it',
    );
  });

  it("refuses writes to vaultd's own folders and reads of its state, also through links", async () => {
    await refused('.vaultd/ledger.jsonl', 'read', 'PERMISSION_DENIED');
    await refused('Notes/state-link/grants.json', 'read', 'PERMISSION_DENIED');
    await refused('Notes/state-link/grants.json', 'write', 'PERMISSION_DENIED');
    await refused('Done/old.md', 'write', 'PERMISSION_DENIED');
    assert.equal((await access.resolve('Done/old.md', 'read')).relative, 'Done/old.md');
  });

  it('refuses writes into a folder holding HEAD, whatever its name, and any path naming a HEAD', async () => {
    const bare = await createVaultAccess({
      roots: [{ name: 'vault', path: vault, writable: true }],
    });
    // What `git init --bare Scratch/backup.git` makes, in the parts git looks at.
    await mkdir(join(vault, 'Scratch', 'backup.git', 'objects'), { recursive: true });
    await mkdir(join(vault, 'Scratch', 'backup.git', 'refs'));
    await writeFile(join(vault, 'Scratch', 'backup.git', 'HEAD'), 'ref: refs/heads/main\n');
    await mkdir(join(vault, 'Scratch', 'half', 'objects'), { recursive: true });
    await mkdir(join(vault, 'Scratch', 'half', 'refs'));
    for (const path of [
      'Scratch/backup.git/hooks/pre-receive',
      'Scratch/backup.git/config',
      'Scratch/backup.git',
      join(vault, 'Scratch', 'backup.git', 'hooks'),
      'Scratch/half/HEAD',
      'Scratch/half/Head',
      'Scratch/new/HEAD/x',
    ]) {
      await assert.rejects(bare.resolve(path, 'write'), (error: unknown) => {
        assert.ok(error instanceof ToolError, String(error));
        assert.equal(error.code, 'PERMISSION_DENIED', path);
        assert.match(error.message, /HEAD.*no tool may/, path);
        return true;
      });
      await bare.resolve(path, 'read');
    }
    assert.equal(
      (await bare.resolve('Scratch/half/config', 'write')).relative,
      'Scratch/half/config',
    );
    assert.equal(
      (await bare.resolve('Scratch/HEADS-UP.md', 'write')).relative,
      'Scratch/HEADS-UP.md',
    );
    await rm(join(vault, 'Scratch'), { recursive: true });
  });

  it('refuses writes into a .git folder or file at any depth, with no protected path configured', async () => {
    // As the executor's default access: the vault alone, nothing listed as protected.
    const bare = await createVaultAccess({
      roots: [{ name: 'vault', path: vault, writable: true }],
    });
    await mkdir(join(vault, 'Scratch', 'proj', '.git', 'hooks'), { recursive: true });
    await mkdir(join(vault, 'Scratch', 'gitdirs', 'sep'), { recursive: true });
    // A `.git` that is a link to a git folder of another name (git init --separate-git-dir).
    await mkdir(join(vault, 'Scratch', 'sep'));
    await symlink(join(vault, 'Scratch', 'gitdirs', 'sep'), join(vault, 'Scratch', 'sep', '.git'));
    for (const path of [
      'Scratch/proj/.git/hooks/pre-commit',
      'Scratch/proj/.git',
      'Scratch/proj/.Git/config',
      'Scratch/x/../proj/.git/config',
      join(vault, 'Scratch', 'proj', '.git', 'config'),
      'Scratch/fresh/.git',
      'Scratch/sep/.git/hooks/pre-commit',
      '.git/config',
    ]) {
      await assert.rejects(bare.resolve(path, 'write'), (error: unknown) => {
        assert.ok(error instanceof ToolError, String(error));
        assert.equal(error.code, 'PERMISSION_DENIED', path);
        assert.match(error.message, /\.git.*no tool may change/i, path);
        return true;
      });
      await bare.resolve(path, 'read');
    }
    assert.equal(
      (await bare.resolve('Scratch/proj/.gitignore', 'write')).relative,
      'Scratch/proj/.gitignore',
    );
    assert.equal((await bare.resolve('Scratch/proj', 'write')).relative, 'Scratch/proj');
    await rm(join(vault, 'Scratch'), { recursive: true });
  });

  it('keeps a read-only root read-only, and names it by absolute path', async () => {
    const inExtra = await access.resolve(join(base, 'extra', 'f.txt'), 'read');
    assert.equal(inExtra.root.name, 'extra');
    assert.equal(access.display(inExtra), join(base, 'extra', 'f.txt'));
    await refused(join(base, 'extra', 'f.txt'), 'write', 'PERMISSION_DENIED');
  });

  it('refuses a loop of links', async () => {
    await refused('Notes/loop-a', 'read', 'PERMISSION_DENIED');
  });

  it('reports the files a call changed through its own view', () => {
    const seen: string[] = [];
    access.forCall((path) => seen.push(path)).changed('/x');
    access.changed('/y');
    assert.deepEqual(seen, ['/x']);
  });
});
