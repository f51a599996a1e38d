import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { writeFileAtomic, type WriteFileAtomicOptions } from './atomic-write.ts';
import { lstat, realpath } from './fs-calls.ts';
import { errnoCode, isVanished, toVaultIoError, VaultIoError } from './fs-errors.ts';

const roots = new Map<string, Promise<string>>();

/**
 * Write a file inside the vault, atomically, after checking that its folder is the vault's own
 * folder of that name, with no symbolic link on the way ({@link assertInsideVault}): the one
 * helper every write of a note goes through, so nothing is ever written through a link. The file itself is replaced by a
 * rename, never opened for writing: a symbolic link or hard link at the path is replaced, not
 * followed.
 * @param root absolute path of the vault.
 * @param path absolute path of the file.
 * @param data the full new content.
 * @param options as {@link writeFileAtomic}, and the folder's check if already started.
 * @throws VaultIoError (code `EOUTSIDE`) when the folder is a link or resolves outside the vault.
 */
export async function writeInVault(
  root: string,
  path: string,
  data: string | Uint8Array,
  options: WriteInVaultOptions = {},
): Promise<void> {
  await (options.folderChecked ?? assertInsideVault(root, dirname(path)));
  await writeFileAtomic(path, data, options);
}

/** {@link writeInVault}'s options. */
export interface WriteInVaultOptions extends WriteFileAtomicOptions {
  /**
   * The check of the file's folder ({@link assertInsideVault} of `dirname(path)`), when the
   * caller started it earlier, beside other work on the note; it is awaited before anything is
   * made in the folder.
   */
  readonly folderChecked?: Promise<void>;
}

/**
 * Throw unless `dir` is the vault's own folder of that name: its real path must be the vault's
 * real path joined with `dir`'s path inside the vault, so neither `dir` nor any folder between the
 * vault and it is a symbolic link (to outside the vault, or elsewhere in it). One `realpath` per
 * call (the vault's own real path is cached); a folder whose real path is spelled differently (a
 * case-insensitive file system) is then checked one component at a time.
 * @param root absolute path of the vault.
 * @param dir absolute path of a folder in it.
 * @throws VaultIoError with code `EOUTSIDE` when `dir` is a link, has one on its way or resolves
 *   outside the vault; with the `realpath` error's code (`ENOENT`…) when it cannot be resolved.
 */
export function assertInsideVault(root: string, dir: string): Promise<void> {
  // Checks of one folder asked for while one runs join it: a backlog's forty notes in flight each
  // checked `In_Progress/` and `Done/`, one `realpath` (a thread-pool job and a `readlink` per
  // component) each, all at once (bench/README.md, item 49). A joined check started a few
  // microseconds before it was asked for, the same order of time as the one between any check
  // and the move it guards; one that fails is not shared (the folder may have been made since):
  // each caller that joined it checks again on its own.
  const key = `${root}\0${dir}`;
  const running = checking.get(key);
  if (running !== undefined) return running.catch(() => checkInsideVault(root, dir));
  const check = checkInsideVault(root, dir).finally(() => {
    if (checking.get(key) === check) checking.delete(key);
  });
  checking.set(key, check);
  return check;
}

const checking = new Map<string, Promise<void>>();

async function checkInsideVault(root: string, dir: string): Promise<void> {
  const inside = relative(root, dir);
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw refused(dir, `${dir} is not inside the vault ${root}`);
  }
  let base: string;
  let real: string;
  try {
    base = await realRoot(root);
    real = await realpath(dir);
  } catch (error) {
    throw toVaultIoError('realpath', dir, error);
  }
  if (real === join(base, inside)) return;
  let at = root;
  for (const part of inside === '' ? [] : inside.split(sep)) {
    at = join(at, part);
    let stats;
    try {
      stats = await lstat(at);
    } catch (error) {
      throw toVaultIoError('lstat', at, error);
    }
    if (stats.isSymbolicLink()) {
      throw refused(
        dir,
        `${at} is a symbolic link (to ${real}): vaultd writes and moves nothing through a link; make it a real folder`,
      );
    }
  }
  if (real !== base && !real.startsWith(base.endsWith(sep) ? base : base + sep)) {
    throw refused(dir, `${dir} resolves to ${real}, outside the vault ${base}`);
  }
}

/**
 * Make a folder of the vault that may be missing (and the missing folders above it, up to the
 * vault), never through a link: each folder is checked with {@link assertInsideVault} before
 * anything is made in it, so a link on the way refuses the whole path and nothing is made outside.
 * @param root absolute path of the vault, which must exist.
 * @param dir absolute path of the folder.
 * @throws VaultIoError as {@link assertInsideVault}, or the `mkdir` error.
 */
export async function makeFolderInVault(root: string, dir: string): Promise<void> {
  try {
    await assertInsideVault(root, dir);
    return;
  } catch (error) {
    if (!isVanished(error)) throw error;
  }
  const parent = dirname(dir);
  if (relative(root, parent) !== '') await makeFolderInVault(root, parent);
  try {
    // Not recursive: mkdir never follows a link at its last component (EEXIST), so a link put
    // there since the check is left alone and refused below.
    await mkdir(dir);
  } catch (error) {
    if (errnoCode(error) !== 'EEXIST') throw toVaultIoError('mkdir', dir, error);
  }
  await assertInsideVault(root, dir);
}

function realRoot(root: string): Promise<string> {
  let real = roots.get(root);
  if (real === undefined) {
    real = realpath(root);
    roots.set(root, real);
    real.catch(() => roots.delete(root));
  }
  return real;
}

function refused(dir: string, message: string): VaultIoError {
  return new VaultIoError(
    'write into',
    dir,
    Object.assign(new Error(message), { code: 'EOUTSIDE' }),
  );
}

/**
 * Append text to a regular file inside the vault: the folder is checked as in
 * {@link writeInVault}, the file is opened without following a symbolic link and refused when it
 * is not a regular file with a single name (a hard link could change a file elsewhere).
 * @param root absolute path of the vault.
 * @param path absolute path of the file.
 * @param text what to append, or a function of the file's text that returns it: it is read
 *   through the same descriptor the text is appended with, when it is valid UTF-8 of at most
 *   `readLimit` bytes (`null` otherwise).
 * @param readLimit the most bytes read for `text` as a function.
 * @throws VaultIoError when the file is not one vaultd may write.
 */
export async function appendInVault(
  root: string,
  path: string,
  text: string | ((current: string | null) => string | Promise<string>),
  readLimit = 0,
): Promise<void> {
  await assertInsideVault(root, dirname(path));
  let handle;
  try {
    // O_NONBLOCK: a fifo put in the note's place fails at once (ENXIO) instead of holding a
    // thread of the pool until a reader comes; a regular file writes the same.
    const access = typeof text === 'string' ? constants.O_WRONLY : constants.O_RDWR;
    handle = await open(
      path,
      access | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
    const stats = await handle.stat();
    if (!stats.isFile() || stats.nlink !== 1) {
      throw Object.assign(new Error(`${path} is not a regular file with a single name`), {
        code: 'EOUTSIDE',
      });
    }
    let appended = text;
    if (typeof appended !== 'string') {
      appended = await appended(
        stats.size <= readLimit ? await readText(handle, stats.size) : null,
      );
    }
    await handle.writeFile(appended, 'utf8');
    await handle.sync();
  } catch (error) {
    throw toVaultIoError('append', path, error);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** A file's first `size` bytes as text, or null when they are not valid UTF-8 or it shrank. */
async function readText(handle: FileHandle, size: number): Promise<string | null> {
  const buffer = Buffer.alloc(size);
  let filled = 0;
  while (filled < size) {
    const { bytesRead } = await handle.read(buffer, filled, size - filled, filled);
    if (bytesRead === 0) return null;
    filled += bytesRead;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buffer);
  } catch {
    return null;
  }
}
