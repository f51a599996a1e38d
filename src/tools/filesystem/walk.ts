import type { Dir, Dirent } from 'node:fs';
import { opendir } from 'node:fs/promises';
import { join } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';
import type { VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { MAX_TREE_DEPTH, pinDir } from './pinned.ts';

// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const UNSPELLABLE = /[\u0000-\u001f\u007f\ufffd]/u;

/** One entry met by {@link walk}. */
export interface WalkEntry {
  /** Absolute real path (the entry itself, not a link's target). */
  readonly path: string;
  /** The entry named through its pinned folder: valid only during the visit. */
  readonly at: string;
  /** Path relative to where the walk started, `/`-separated. */
  readonly relative: string;
  readonly type: 'file' | 'directory' | 'symlink' | 'other';
  /** 1 for the start folder's own entries. */
  readonly depth: number;
}

/** Bounds of a {@link walk}. */
export interface WalkOptions {
  /** Folder levels below the start to go into (0: the start folder's entries only). */
  readonly maxDepth: number;
  /** Entries to look at, at most. */
  readonly maxVisited: number;
  /** Stop when `Date.now()` passes this. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
  /** Check each folder (and with 'write' each entry) through the access before going on. */
  readonly mode: 'read' | 'write';
}

/** Why a walk stopped early, or null when it saw everything. */
export type WalkCut = null | 'depth' | 'count' | 'time';

/**
 * Walk a folder breadth-first without following symbolic links (a link is an entry, never a way
 * in), each folder pinned before it is listed, every folder checked through `files` (folders
 * protected for reading are left out; in 'write' mode a protected entry stops the walk with an
 * error), within depth, count and time bounds.
 * @param files the call's access.
 * @param start absolute real path of the start folder (already resolved).
 * @param options bounds.
 * @param visit called for each entry; return false to stop.
 * @returns why the walk stopped early, or null.
 */
export async function walk(
  files: VaultAccess,
  start: string,
  options: WalkOptions,
  visit: (entry: WalkEntry) => boolean | Promise<boolean>,
): Promise<WalkCut> {
  const queue: { path: string; relative: string; depth: number }[] = [
    { path: start, relative: '', depth: 0 },
  ];
  let visited = 0;
  let cut: WalkCut = null;
  while (queue.length > 0) {
    const folder = queue.shift();
    if (folder === undefined) break;
    const dir = await pinDir(folder.path);
    try {
      // No more entries than are left to look at (and one to tell there are more): a folder of a
      // million entries was read and sorted whole, 4.4 s and 200 MB, before the count refused it.
      const names = await listUpTo(dir.entry(''), options.maxVisited - visited + 1);
      names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const d of names) {
        if (options.signal?.aborted === true) return 'time';
        if (options.deadline !== undefined && Date.now() > options.deadline) return 'time';
        if (visited >= options.maxVisited) return 'count';
        visited++;
        const path = join(folder.path, d.name);
        const relative = folder.relative === '' ? d.name : `${folder.relative}/${d.name}`;
        const type = d.isSymbolicLink()
          ? 'symlink'
          : d.isDirectory()
            ? 'directory'
            : d.isFile()
              ? 'file'
              : 'other';
        // A file no tool may read (vaultd's config file) is left out of listings and searches, as
        // its state folder is; on the path as listed, which is real below the resolved start.
        if (options.mode === 'read' && files.protectedPaths?.read.some((p) => isInside(path, p)))
          continue;
        // A link that is itself a protected path (vaultd's config kept as a link) is not removed
        // or moved with its folder: made again, it would put another file at that path.
        if (
          options.mode === 'write' &&
          type === 'symlink' &&
          files.protectedPaths?.write.includes(path) === true
        ) {
          throw new ToolError(
            'PERMISSION_DENIED',
            `${relative} is a link that belongs to vaultd (its config or a plugin, or the way to one), which no tool may change`,
          );
        }
        // A name the tools cannot spell (a control character; bytes that are not UTF-8, read as
        // U+FFFD, so the name read is not the file's) failed as if the agent's path were wrong, or
        // as a missing folder, after part of the tree was changed.
        if (options.mode === 'write' && UNSPELLABLE.test(d.name)) {
          throw new ToolError(
            'EXECUTION_FAILED',
            `${JSON.stringify(relative)} has a name this tool cannot handle (a control character, or bytes that are not UTF-8); rename or remove it another way`,
          );
        }
        // A link is checked as a folder entry, never through its target: removing or moving a
        // link that points out of the roots touches only the link.
        if (type === 'directory' || (options.mode === 'write' && type !== 'symlink')) {
          try {
            await files.resolve(path, options.mode);
          } catch (error) {
            if (options.mode === 'write') throw error;
            continue; // a folder no tool may read (vaultd's state) is left out
          }
        }
        const entry: WalkEntry = {
          path,
          at: dir.entry(d.name),
          relative,
          type,
          depth: folder.depth + 1,
        };
        if (!(await visit(entry))) return cut;
        if (type === 'directory') {
          if (folder.depth + 1 > options.maxDepth) cut ??= 'depth';
          else queue.push({ path, relative, depth: folder.depth + 1 });
        }
      }
    } finally {
      await dir.close();
    }
  }
  return cut;
}

/** A folder's first `most` entries, in the order the file system gives them. */
async function listUpTo(folder: string, most: number): Promise<Dirent[]> {
  const out: Dirent[] = [];
  let handle: Dir | undefined;
  try {
    handle = await opendir(folder, { bufferSize: 128 });
    while (out.length < most) {
      const entry = await handle.read();
      if (entry === null) break;
      out.push(entry);
    }
  } finally {
    await handle?.close().catch(() => undefined);
  }
  return out;
}

/**
 * Refuse a recursive change (delete, move) of a folder holding anything protected or more entries
 * than the bound allows.
 * @param files the call's access.
 * @param start the folder.
 * @param shown its path for messages.
 * @param maxVisited the bound.
 * @param visit optional: told about each entry.
 */
export async function checkTreeWritable(
  files: VaultAccess,
  start: string,
  shown: string,
  maxVisited: number,
  visit: (entry: WalkEntry) => void = () => undefined,
): Promise<void> {
  const cut = await walk(
    files,
    start,
    { maxDepth: MAX_TREE_DEPTH, maxVisited, mode: 'write' },
    (entry) => {
      visit(entry);
      return true;
    },
  );
  if (cut !== null) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${shown} holds more than ${maxVisited} entries (or is deeper than ${MAX_TREE_DEPTH} folders); this tool does not change a tree that large`,
    );
  }
}
