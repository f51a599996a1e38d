import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import {
  link,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  rename,
  rmdir,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = constants;

/**
 * A folder opened and checked once: its entries are named through `/proc/self/fd/<fd>/`, so a
 * link swapped in for any component of its path after the check changes nothing (Node has no
 * `openat`; the kernel's fd links give the same guarantee).
 */
export interface PinnedDir {
  /** The folder's real path, as checked. */
  readonly path: string;
  /** A path naming `name` inside the pinned folder (not following a link at `name` is up to the call). */
  entry(name: string): string;
  /** Flush the folder's entries to disk (after a rename). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Open a folder without following a link at its last component and check that what was opened is
 * the folder that was checked (`realDir`): a link swapped in for a parent fails here.
 * @param realDir absolute real path, as `ctx.files.resolve` gave it.
 * @throws ToolError `PERMISSION_DENIED` when the folder is not the one checked, `EXECUTION_FAILED`
 *   when it is missing or not a folder.
 */
export async function pinDir(realDir: string): Promise<PinnedDir> {
  let handle: FileHandle;
  try {
    handle = await open(realDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') {
      throw new ToolError(
        'PERMISSION_DENIED',
        `${realDir} changed while the call ran (a link or a file took the folder's place); nothing was done`,
      );
    }
    throw fsError(error, realDir);
  }
  const link = `/proc/self/fd/${handle.fd}`;
  let opened: string | undefined;
  try {
    opened = await readlink(link);
  } catch {
    // No /proc (an unusual container): fall back to the path, checked once at resolve time.
    opened = undefined;
  }
  if (opened !== undefined && opened !== realDir) {
    await handle.close();
    throw new ToolError(
      'PERMISSION_DENIED',
      `${realDir} changed while the call ran (a link was swapped in for a folder on its path); nothing was done`,
    );
  }
  return {
    path: realDir,
    entry: (name) => (opened === undefined ? join(realDir, name) : `${link}/${name}`),
    sync: () => handle.sync().catch(() => undefined),
    close: () => handle.close(),
  };
}

/**
 * Make the missing folders of `realDir`, one level at a time, each inside the folder above it
 * pinned and checked ({@link pinDir}): a link swapped in for a folder on the way fails the call
 * instead of having the folders made where it points. `mkdir` by path (recursive) followed such a
 * link: empty folders of the agent's naming appeared in `In_Progress/` or outside the roots.
 * @param realDir absolute real path of the folder, as `ctx.files.resolve` gave it.
 * @throws ToolError as {@link pinDir}, or the `mkdir` error.
 */
export async function makeFolders(realDir: string): Promise<void> {
  const missing: string[] = [];
  let existing = realDir;
  let found;
  while ((found = await lstatOrNull(existing)) === null) {
    const up = dirname(existing);
    if (up === existing) break;
    missing.unshift(basename(existing));
    existing = up;
  }
  // A file where a folder goes is the call's mistake, not a race: say so.
  if (found?.isFile() === true) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${existing} is a file, so no folder can be made inside it; nothing was done`,
    );
  }
  let dir = await pinDir(existing);
  try {
    for (const name of missing) {
      try {
        await mkdir(dir.entry(name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const next = await pinDir(join(dir.path, name));
      await dir.close();
      dir = next;
    }
  } finally {
    await dir.close();
  }
}

/**
 * Delete a folder and everything in it, one pinned folder at a time: each folder is opened
 * without following a link (through its pinned parent's `/proc/self/fd/<fd>/`), listed and
 * emptied by name through its own descriptor, then removed. A link inside is removed, never
 * followed; a link swapped in for a folder while the delete runs fails its open (nothing behind
 * it is touched). Node's `rm(recursive)` works by path names, and a folder swapped for a link
 * between its "not empty" and its listing had the link's target emptied: files outside the roots.
 * @param entry the folder, named through its pinned parent ({@link PinnedDir.entry}).
 * @param limits the most entries to delete (those the check before counted, and some to spare);
 *   past them, or deeper than {@link MAX_TREE_DEPTH}, the delete stops with a
 *   {@link TreeChangedError}.
 * @param pinned whether `entry` goes through a pinned folder (no `/proc`: plain paths).
 */
export async function removeTree(
  entry: string,
  limits: { readonly maxEntries: number },
  pinned = entry.startsWith('/proc/self/fd/'),
): Promise<void> {
  const budget = { left: limits.maxEntries };
  await removeLevel(entry, pinned, MAX_TREE_DEPTH, budget);
}

/** The most folder levels a tree the tools change may have (checked before, held to after). */
export const MAX_TREE_DEPTH = 64;

/** The error of a tree that outgrew the check made before its delete. */
export class TreeChangedError extends Error {
  readonly code = 'ETREECHANGED';
}

async function removeLevel(
  entry: string,
  pinned: boolean,
  depthLeft: number,
  budget: { left: number },
): Promise<void> {
  // The tree was checked before (its depth and size); one that grew past that meanwhile (an
  // agent renaming a deep chain into it) would hold a descriptor a level and take any time.
  if (depthLeft < 0) throw new TreeChangedError('the folder grew deeper while it was deleted');
  const handle = await open(entry, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    const here = pinned ? `/proc/self/fd/${handle.fd}` : entry;
    for (const name of await readdir(here)) {
      if (--budget.left < 0) {
        throw new TreeChangedError('the folder gained entries while it was deleted');
      }
      const child = join(here, name);
      if ((await lstat(child)).isDirectory())
        await removeLevel(child, pinned, depthLeft - 1, budget);
      else await unlink(child);
    }
  } finally {
    await handle.close();
  }
  await rmdir(entry);
}

/**
 * Run `work` with the parent folder of `realPath` pinned, then close it.
 * @param realPath absolute real path of a file (or folder) inside a root.
 * @param work gets the pinned parent and the last component's name.
 */
export async function inParent<T>(
  realPath: string,
  work: (dir: PinnedDir, name: string) => Promise<T>,
): Promise<T> {
  const dir = await pinDir(dirname(realPath));
  try {
    return await work(dir, basename(realPath));
  } finally {
    await dir.close();
  }
}

/**
 * Open a file for reading, never through a link at its last component.
 * @param dir its pinned folder.
 * @param name its name.
 * @param shown the path as the agent sees it, for messages.
 */
export async function openForRead(
  dir: PinnedDir,
  name: string,
  shown: string,
): Promise<FileHandle> {
  try {
    // O_NONBLOCK: a fifo must not hold a thread of the pool (vault/read-regular.ts).
    return await open(dir.entry(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new ToolError(
        'PERMISSION_DENIED',
        `${shown} is a symbolic link (swapped in while the call ran); nothing was read`,
      );
    }
    throw fsError(error, shown);
  }
}

/** Options of {@link writeAtomic}. */
export interface WriteOptions {
  /** Fail with `EEXIST` instead of replacing a file already there (checked atomically). */
  readonly createOnly?: boolean;
  /** Permission bits of the new file; default those of the file it replaces, else 0o644. */
  readonly mode?: number;
}

/**
 * Write a file atomically: a temporary file in the same folder, flushed, then renamed over the
 * name (a link at the name is replaced, never followed); the mode of the file replaced is kept.
 * @param dir the pinned folder.
 * @param name the file's name.
 * @param data the new content.
 * @param options create-only and mode.
 * @returns whether a file was there before.
 */
export async function writeAtomic(
  dir: PinnedDir,
  name: string,
  data: string | Uint8Array,
  options: WriteOptions = {},
): Promise<{ replaced: boolean }> {
  const before = await lstatOrNull(dir.entry(name));
  if (before?.isDirectory() === true) {
    throw new ToolError('EXECUTION_FAILED', `${name} is a folder, not a file`);
  }
  const mode = options.mode ?? (before?.isFile() === true ? before.mode & 0o7777 : 0o644);
  const tmp = `.${name.slice(0, 100)}.${randomBytes(6).toString('hex')}.vaultd-tmp`;
  const handle = await open(dir.entry(tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  let done = false;
  try {
    try {
      await handle.writeFile(data);
      await handle.chmod(mode);
      if (before?.isFile() === true && process.getuid?.() === 0) {
        // vaultd running as root keeps the owner of the file it replaces.
        await handle.chown(before.uid, before.gid).catch(() => undefined);
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.createOnly === true) {
      // link() refuses an existing name atomically, where rename() would replace it.
      await link(dir.entry(tmp), dir.entry(name));
      await unlink(dir.entry(tmp));
    } else {
      await rename(dir.entry(tmp), dir.entry(name));
    }
    done = true;
    await dir.sync();
    return { replaced: before !== null && options.createOnly !== true };
  } finally {
    if (!done) await unlink(dir.entry(tmp)).catch(() => undefined);
  }
}

/**
 * `lstat`, or null when nothing is there.
 * @param path the path.
 */
export async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await lstat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/**
 * A file-system error as a tool error with a message an agent can act on.
 * @param error what the file system threw.
 * @param shown the path as the agent sees it.
 */
export function fsError(error: unknown, shown: string): ToolError {
  if (error instanceof ToolError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const say: Record<string, string> = {
    ENOENT: `${shown} does not exist`,
    ENOTDIR: `a part of ${shown} is a file, not a folder`,
    EISDIR: `${shown} is a folder, not a file`,
    EEXIST: `${shown} already exists`,
    ENOTEMPTY: `${shown} is a folder that is not empty`,
    EACCES: `vaultd has no permission for ${shown}`,
    EPERM: `the system does not allow this on ${shown}`,
    ENOSPC: `the disk is full (writing ${shown})`,
    EXDEV: `${shown} is on another file system`,
    ENAMETOOLONG: `${shown} is a name too long for the file system`,
  };
  const message =
    (code === undefined ? undefined : say[code]) ?? `${shown}: ${(error as Error).message}`;
  return new ToolError('EXECUTION_FAILED', message, { cause: error });
}

/**
 * The error for a path whose real path was checked and that is a link now.
 * @param shown the path as the agent sees it.
 */
export function swappedIn(shown: string): ToolError {
  return new ToolError(
    'PERMISSION_DENIED',
    `${shown} changed while the call ran (a link was swapped in); nothing was done`,
  );
}

/**
 * Refuse a file with other hard links: one of them may be outside the roots, and nothing tells
 * where (a link made by someone who could write in the vault, to a file vaultd may read).
 * @param nlink the file's link count.
 * @param shown the path as the agent sees it.
 */
export function checkSingleLink(nlink: number, shown: string): void {
  if (nlink > 1) {
    throw new ToolError(
      'PERMISSION_DENIED',
      `${shown} has ${nlink - 1} other hard link(s), which may be outside the roots; vaultd does not read it`,
    );
  }
}
