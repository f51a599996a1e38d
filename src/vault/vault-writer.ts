import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, sep } from 'node:path';
import { writeFileAtomic, type WriteFileAtomicOptions } from './atomic-write.ts';
import { realpath } from './fs-calls.ts';
import { toVaultIoError, VaultIoError } from './fs-errors.ts';

const roots = new Map<string, Promise<string>>();

/**
 * Write a file inside the vault, atomically, after checking that its folder's real path (symbolic
 * links resolved) is inside the vault's real path: the one helper every write into the vault goes
 * through, so nothing is ever written through a link to outside. The file itself is replaced by a
 * rename, never opened for writing: a symbolic link or hard link at the path is replaced, not
 * followed.
 * @param root absolute path of the vault.
 * @param path absolute path of the file.
 * @param data the full new content.
 * @param options as {@link writeFileAtomic}.
 * @throws VaultIoError (code `EXDEV`-like `EOUTSIDE`) when the folder resolves outside the vault.
 */
export async function writeInVault(
  root: string,
  path: string,
  data: string | Uint8Array,
  options: WriteFileAtomicOptions = {},
): Promise<void> {
  await assertInsideVault(root, dirname(path));
  await writeFileAtomic(path, data, options);
}

/**
 * Throw unless `dir`'s real path is the vault's real path or inside it.
 * @param root absolute path of the vault.
 * @param dir absolute path of a folder in it.
 */
export async function assertInsideVault(root: string, dir: string): Promise<void> {
  let realRoot = roots.get(root);
  if (realRoot === undefined) {
    realRoot = realpath(root);
    roots.set(root, realRoot);
    realRoot.catch(() => roots.delete(root));
  }
  let base: string;
  let real: string;
  try {
    base = await realRoot;
    real = await realpath(dir);
  } catch (error) {
    throw toVaultIoError('realpath', dir, error);
  }
  if (real !== base && !real.startsWith(base.endsWith(sep) ? base : base + sep)) {
    const error = Object.assign(
      new Error(`${dir} resolves to ${real}, outside the vault ${base}`),
      {
        code: 'EOUTSIDE',
      },
    );
    throw new VaultIoError('write', dir, error);
  }
}

/**
 * Append text to a regular file inside the vault: the folder is checked as in
 * {@link writeInVault}, the file is opened without following a symbolic link and refused when it
 * is not a regular file with a single name (a hard link could change a file elsewhere).
 * @param root absolute path of the vault.
 * @param path absolute path of the file.
 * @param text what to append.
 * @throws VaultIoError when the file is not one vaultd may write.
 */
export async function appendInVault(root: string, path: string, text: string): Promise<void> {
  await assertInsideVault(root, dirname(path));
  let handle;
  try {
    // O_NONBLOCK: a fifo put in the note's place fails at once (ENXIO) instead of holding a
    // thread of the pool until a reader comes; a regular file writes the same.
    handle = await open(
      path,
      constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
    const stats = await handle.stat();
    if (!stats.isFile() || stats.nlink !== 1) {
      throw Object.assign(new Error(`${path} is not a regular file with a single name`), {
        code: 'EOUTSIDE',
      });
    }
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } catch (error) {
    throw toVaultIoError('append', path, error);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
