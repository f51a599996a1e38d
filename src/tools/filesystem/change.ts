import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { link, lstat, rename, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { toolOutput } from '../../protocol/output.ts';
import type { PreviewBasis, ResolvedPath, ToolContext, VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { readUpTo } from '../../vault/read-regular.ts';
import {
  basisOf,
  checkUnchanged,
  readTextFile,
  resolvePath,
  sha256,
  softPreview,
  unifiedDiff,
  PATH_PARAM as PATH,
} from './common.ts';
import { readFilesystemConfig, type FilesystemConfig } from './config.ts';
import {
  checkSingleLink,
  fsError,
  lstatOrNull,
  openForRead,
  pinDir,
  inParent,
  removeTree,
  swappedIn,
  TreeChangedError,
  writeAtomic,
  type PinnedDir,
} from './pinned.ts';
import { checkTreeWritable } from './walk.ts';

/** Files of a folder to be deleted whose content a preview pins (its basis), at most. */
const BASIS_FILES = 50;
/** Entries of a folder a delete preview names, at most. */
const PREVIEW_ENTRIES = 100;

/** Pin the parents of two paths (once when they share one) and run `work`. */
async function inParents<T>(
  a: string,
  b: string,
  work: (da: PinnedDir, db: PinnedDir) => Promise<T>,
): Promise<T> {
  const da = await pinDir(dirname(a));
  try {
    if (dirname(a) === dirname(b)) return await work(da, da);
    const db = await pinDir(dirname(b));
    try {
      return await work(da, db);
    } finally {
      await db.close();
    }
  } finally {
    await da.close();
  }
}

type TwoPaths = {
  source: string;
  destination: string;
  overwrite?: boolean;
};

const TWO_PATHS = {
  source: PATH,
  destination: PATH,
  overwrite: {
    type: 'boolean',
    default: false,
    description: 'replace a file already at destination',
  },
};

/**
 * The two paths of a copy or a move, resolved as its handler uses them (a root itself is never
 * replaced, nor moved), shown as agents see them, with the pack's config. The preview resolves
 * them the same way, so it says when the call will be refused.
 * @param sourceMode `read` for a copy, `write` for a move (which removes the source).
 */
async function resolveTwo(
  args: TwoPaths,
  ctx: { readonly config: Readonly<Record<string, unknown>>; readonly files: VaultAccess },
  sourceMode: 'read' | 'write',
): Promise<{
  config: FilesystemConfig;
  src: ResolvedPath;
  dest: ResolvedPath;
  from: string;
  to: string;
}> {
  const config = readFilesystemConfig(ctx.config);
  const src = await resolvePath(ctx.files, args.source, sourceMode, sourceMode === 'write');
  const dest = await resolvePath(ctx.files, args.destination, 'write', true);
  return { config, src, dest, from: ctx.files.display(src), to: ctx.files.display(dest) };
}

/** What a destination holds now, for a copy or a move. */
async function destinationState(
  config: FilesystemConfig,
  dest: ResolvedPath,
  shown: string,
  overwrite: boolean,
): Promise<{ basis: PreviewBasis; text: string | null }> {
  const stat = await lstatOrNull(dest.path);
  if (stat === null) return { basis: { path: dest.path, sha256: null }, text: null };
  if (stat.isDirectory()) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${shown} is a folder; give the full path of the new file, folder included`,
    );
  }
  if (!overwrite) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${shown} already exists; set overwrite: true to replace it`,
    );
  }
  const current = await readTextFile(dest, shown, config.maxEditBytes).catch(() => null);
  return { basis: basisOf(dest, current), text: current?.text ?? null };
}

/** `copy_file`: a file to a new path, never over an existing file unless `overwrite`. */
export const copyFile = defineTool<TwoPaths>({
  name: 'copy_file',
  description:
    'Copy a file to a new path (its permission bits kept); the copy is written atomically. Never replaces a file already at destination unless overwrite: true. Folders are not copied.',
  parameters: TWO_PATHS,
  required: ['source', 'destination'],
  safety: 'dangerous',
  idempotent: false,
  categories: ['filesystem'],
  preview: softPreview(async (args: TwoPaths, ctx) => {
    const { config, src, dest, from, to } = await resolveTwo(args, ctx, 'read');
    const source = await readTextFile(src, from, config.maxWriteBytes).catch(() => undefined);
    const state = await destinationState(config, dest, to, args.overwrite === true).catch(
      (e: Error) => e,
    );
    if (state instanceof Error)
      return { kind: 'text', text: `Copy ${from} to ${to}: this call will fail: ${state.message}` };
    const basis = [
      ...(source === undefined || source === null ? [] : [basisOf(src, source)]),
      state.basis,
    ];
    if (state.text !== null && source !== undefined && source !== null) {
      return {
        kind: 'diff',
        text: `Copy ${from} over ${to}:\n${unifiedDiff(to, state.text, source.text)}`,
        basis,
      };
    }
    return {
      kind: 'text',
      text: `Copy ${from} to ${to}${state.basis.sha256 === null ? ' (a new file)' : ' (replacing it)'}`,
      basis,
    };
  }),
  async handler(args, ctx) {
    const { config, src, dest, from, to } = await resolveTwo(args, ctx, 'read');
    checkUnchanged(ctx.files, args.source, src);
    checkUnchanged(ctx.files, args.destination, dest);
    const overwrite = args.overwrite === true;
    const content = await readBytes(src, from, config.maxWriteBytes);
    await destinationState(config, dest, to, overwrite);
    try {
      await inParents(dest.path, dest.path, (dir) =>
        writeAtomic(dir, basename(dest.path), content.bytes, {
          createOnly: !overwrite,
          mode: content.mode,
        }),
      );
    } catch (error) {
      throw fsError(error, to);
    }
    ctx.files.changed(dest.path);
    return toolOutput(`Copied ${from} to ${to} (${content.bytes.length} bytes)`, {
      source: from,
      destination: to,
      bytes: content.bytes.length,
      sha256: sha256(content.bytes),
    });
  },
});

/** A whole file's bytes (any content) through its pinned folder, under a cap. */
async function readBytes(
  resolved: ResolvedPath,
  shown: string,
  max: number,
): Promise<{ bytes: Buffer; mode: number }> {
  const dir = await pinDir(dirname(resolved.path));
  try {
    const handle = await openForRead(dir, basename(resolved.path), shown);
    try {
      const stat = await handle.stat();
      if (stat.isDirectory())
        throw new ToolError('EXECUTION_FAILED', `${shown} is a folder; copy_file copies files`);
      if (!stat.isFile()) throw new ToolError('EXECUTION_FAILED', `${shown} is not a regular file`);
      checkSingleLink(stat.nlink, shown);
      if (stat.size > max)
        throw new ToolError(
          'EXECUTION_FAILED',
          `${shown} is ${stat.size} bytes, over max_write_bytes ${max}`,
        );
      // Never past the cap, even when the file grows while it is read.
      const bytes = await readUpTo(handle, max, stat.size);
      if (bytes === null)
        throw new ToolError(
          'EXECUTION_FAILED',
          `${shown} grew past max_write_bytes ${max} while it was read`,
        );
      return { bytes, mode: stat.mode & 0o7777 };
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw fsError(error, shown);
  } finally {
    await dir.close();
  }
}

/** `move_file`: rename a file or folder, never over an existing file unless `overwrite`. */
export const moveFile = defineTool<TwoPaths>({
  name: 'move_file',
  description:
    "Move or rename a file or a folder (with everything in it). Never replaces anything already at destination unless overwrite: true, which replaces a file (never a folder). Neither path may be in vaultd's own folders.",
  parameters: TWO_PATHS,
  required: ['source', 'destination'],
  safety: 'dangerous',
  idempotent: false,
  categories: ['filesystem'],
  preview: softPreview(async (args: TwoPaths, ctx) => {
    const { config, src, dest, from, to } = await resolveTwo(args, ctx, 'write');
    const stat = await lstatOrNull(src.path);
    const basis: PreviewBasis[] = [];
    if (stat?.isFile() === true) {
      const source = await readTextFile(src, from, config.maxEditBytes).catch(() => null);
      if (source !== null) basis.push(basisOf(src, source));
    }
    const state = await destinationState(config, dest, to, args.overwrite === true).catch(
      (e: Error) => e,
    );
    if (state instanceof Error)
      return { kind: 'text', text: `Move ${from} to ${to}: this call will fail: ${state.message}` };
    basis.push(state.basis);
    const what = stat?.isDirectory() === true ? 'the folder' : 'the file';
    return {
      kind: 'text',
      text: `Move ${what} ${from} to ${to}${state.basis.sha256 === null ? '' : `, replacing the file ${to}`}`,
      basis,
    };
  }),
  async handler(args, ctx) {
    const { config, src, dest, from, to } = await resolveTwo(args, ctx, 'write');
    checkUnchanged(ctx.files, args.source, src);
    checkUnchanged(ctx.files, args.destination, dest);
    const overwrite = args.overwrite === true;
    const stat = await lstatOrNull(src.path);
    if (stat === null) throw new ToolError('EXECUTION_FAILED', `${from} does not exist`);
    // Resolved on its real path a moment ago: a link at its name now was swapped in.
    if (stat.isSymbolicLink()) throw swappedIn(from);
    if (isInside(dest.path, src.path)) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${to} is inside ${from}; a folder cannot move into itself`,
      );
    }
    await destinationState(config, dest, to, overwrite);
    if (stat.isDirectory()) {
      const moved: string[] = [];
      await checkTreeWritable(ctx.files, src.path, from, config.maxVisited, (e) =>
        moved.push(e.relative),
      );
      // Where each entry lands must be writable too: a folder moved into place could otherwise
      // put a file at a protected path below it (vaultd's config in `setup/`, written as
      // `tmp/vaultd.yaml` and moved with `tmp` to `setup`).
      for (const relative of moved) {
        await ctx.files.resolve(join(dest.path, ...relative.split('/')), 'write');
      }
    }
    try {
      if (stat.isDirectory()) await renameFolder(src.path, dest.path);
      else await moveOneFile(src.path, dest.path, stat, overwrite, from, to);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new ToolError(
          'EXECUTION_FAILED',
          `${to} already exists; set overwrite: true to replace it`,
        );
      }
      throw fsError(error, from);
    }
    if (stat.isDirectory()) await checkLanded(ctx, config, src.path, dest.path, from, to);
    ctx.files.changed(src.path);
    ctx.files.changed(dest.path);
    return toolOutput(`Moved ${from} to ${to}`, {
      source: from,
      destination: to,
      type: stat.isDirectory() ? 'directory' : 'file',
    });
  },
});

/**
 * Move the file looked at (`seen`) through both pinned parents, by hard link, never by renaming
 * the source's name: link() never takes a folder (EPERM), so a folder the agent swapped in at the
 * name after the handler looked (a file needs no tree check) stays where it is; what was linked is
 * compared with `seen` (device and inode) and unlinked when it is another entry. Without
 * `overwrite` the link is made at the destination, which link() refuses atomically when taken;
 * with it, at a temporary name then renamed over the destination. The source's name is unlinked
 * last, only while it still holds the file moved.
 */
async function moveOneFile(
  src: string,
  dest: string,
  seen: Stats,
  overwrite: boolean,
  from: string,
  to: string,
): Promise<void> {
  const changed = (what: string): ToolError =>
    new ToolError(
      'PERMISSION_DENIED',
      `${from} changed while the call ran (${what}); nothing was moved`,
    );
  await inParents(src, dest, async (ds, dd) => {
    const a = ds.entry(basename(src));
    const b = dd.entry(basename(dest));
    const name = basename(dest);
    const landing = overwrite
      ? dd.entry(`.${name.slice(0, 100)}.${randomBytes(6).toString('hex')}.vaultd-tmp`)
      : b;
    try {
      await link(a, landing);
    } catch (error) {
      const now = await lstatOrNull(a).catch(() => null);
      if (now !== null && !sameEntry(now, seen)) {
        throw changed('a folder or another entry took its name');
      }
      throw error;
    }
    if (!sameEntry(await lstat(landing), seen)) {
      await unlink(landing);
      throw changed('another file took its name');
    }
    if (overwrite) {
      try {
        await rename(landing, b);
      } catch (error) {
        await unlink(landing).catch(() => undefined);
        throw error;
      }
    }
    const left = await lstatOrNull(a);
    if (left !== null && sameEntry(left, seen)) await unlink(a);
    await ds.sync();
    if (dd !== ds) await dd.sync();
    if (left !== null && !sameEntry(left, seen)) {
      throw new ToolError(
        'PERMISSION_DENIED',
        `${from} changed while the call ran: the file is at ${to}, and what took its old name was left there`,
        { sideEffect: true },
      );
    }
  });
}

/** Whether two stats are of the same entry on disk. */
function sameEntry(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * Check a moved folder's tree again where it landed: an entry the agent added between the check
 * before the rename and the rename itself (a `.git/hooks/` file, a file at a protected path)
 * moved along unchecked. When one may not be there, the folder is moved back and the call fails.
 */
async function checkLanded(
  ctx: ToolContext,
  config: FilesystemConfig,
  src: string,
  dest: string,
  from: string,
  to: string,
): Promise<void> {
  try {
    await checkTreeWritable(ctx.files, dest, to, config.maxVisited);
    return;
  } catch (refusal) {
    const why = `an entry that may not be in ${to} appeared in ${from} while the call ran (${(refusal as Error).message})`;
    try {
      await renameFolder(dest, src);
    } catch {
      // The agent took the old name (or its folder) meanwhile: the folder may not stay where it
      // landed, with the entry that may not be there, so it goes.
      ctx.files.changed(src);
      ctx.files.changed(dest);
      try {
        await inParent(dest, (dir, name) =>
          removeTree(dir.entry(name), { maxEntries: config.maxVisited }),
        );
      } catch (error) {
        throw new ToolError(
          'PERMISSION_DENIED',
          `${why}; the folder could not be moved back, nor deleted (${(error as Error).message}), and is at ${to}`,
          { sideEffect: true },
        );
      }
      throw new ToolError(
        'PERMISSION_DENIED',
        `${why}; the folder could not be moved back (its old place was taken meanwhile), so it was deleted`,
        { sideEffect: true },
      );
    }
    throw new ToolError('PERMISSION_DENIED', `${why}; the folder was moved back`);
  }
}

/**
 * Rename a folder to a name that must be free, through both pinned parents, and flush them:
 * rename() would replace an empty folder there, so the name is looked at first (EEXIST).
 */
async function renameFolder(from: string, to: string): Promise<void> {
  await inParents(from, to, async (df, dt) => {
    const target = dt.entry(basename(to));
    if ((await lstatOrNull(target)) !== null)
      throw Object.assign(new Error('exists'), { code: 'EEXIST' });
    await rename(df.entry(basename(from)), target);
    await df.sync();
    if (dt !== df) await dt.sync();
  });
}

/** `delete_file`: a file, or a folder with everything in it when `recursive`. */
export const deleteFile = defineTool<{ path: string; recursive?: boolean }>({
  name: 'delete_file',
  description:
    'Delete a file, or an empty folder; a folder with content only with recursive: true (everything in it goes, links removed, never followed). The human approving it sees what would go.',
  parameters: { path: PATH, recursive: { type: 'boolean', default: false } },
  required: ['path'],
  safety: 'dangerous',
  idempotent: false,
  categories: ['filesystem'],
  preview: softPreview(async (args: { path: string; recursive?: boolean }, ctx) => {
    const config = readFilesystemConfig(ctx.config);
    const resolved = await resolvePath(ctx.files, args.path, 'write', true);
    const shown = ctx.files.display(resolved);
    const stat = await lstatOrNull(resolved.path);
    if (stat === null)
      return { kind: 'text', text: `${shown} does not exist: this call will fail` };
    if (!stat.isDirectory()) {
      const current = await readTextFile(resolved, shown, config.maxEditBytes).catch(
        () => undefined,
      );
      if (current === undefined || current === null) {
        return { kind: 'text', text: `Delete ${shown} (${stat.size} bytes, not shown)` };
      }
      return {
        kind: 'diff',
        text: unifiedDiff(shown, current.text, null),
        basis: [basisOf(resolved, current)],
      };
    }
    return folderPreview(ctx.files, config, resolved, shown, args.recursive === true);
  }),
  async handler(args, ctx) {
    return deleteHandler(args, ctx);
  },
});

async function folderPreview(
  files: VaultAccess,
  config: FilesystemConfig,
  resolved: ResolvedPath,
  shown: string,
  recursive: boolean,
): Promise<{ kind: 'text'; text: string; basis: PreviewBasis[] }> {
  const entries: { relative: string; type: string; path: string }[] = [];
  try {
    await checkTreeWritable(files, resolved.path, shown, config.maxVisited, (e) => entries.push(e));
  } catch (error) {
    return {
      kind: 'text',
      text: `Delete the folder ${shown}: this call will fail: ${(error as Error).message}`,
      basis: [],
    };
  }
  if (entries.length > 0 && !recursive) {
    return {
      kind: 'text',
      text: `${shown} is a folder with ${entries.length} entries and recursive is not set: this call will fail`,
      basis: [],
    };
  }
  const basis: PreviewBasis[] = [];
  for (const e of entries.filter((x) => x.type === 'file').slice(0, BASIS_FILES)) {
    const file = await readTextFile(
      { ...resolved, path: e.path, relative: e.relative, exists: true },
      e.relative,
      1024 * 1024,
    ).catch(() => undefined);
    basis.push(
      file === undefined
        ? { path: e.path, sha256: null }
        : basisOf({ ...resolved, path: e.path }, file),
    );
  }
  const shownEntries = entries
    .slice(0, PREVIEW_ENTRIES)
    .map((e) => `- ${e.relative}${e.type === 'directory' ? '/' : ''}`);
  const more =
    entries.length > PREVIEW_ENTRIES ? [`- … and ${entries.length - PREVIEW_ENTRIES} more`] : [];
  return {
    kind: 'text',
    text: [
      `Delete the folder ${shown} and the ${entries.length} entries in it:`,
      ...shownEntries,
      ...more,
    ].join('\n'),
    basis: basis.filter((b) => b.sha256 !== null),
  };
}

async function deleteHandler(
  args: { path: string; recursive?: boolean },
  ctx: ToolContext,
): Promise<unknown> {
  const config = readFilesystemConfig(ctx.config);
  const resolved = await resolvePath(ctx.files, args.path, 'write', true);
  const shown = ctx.files.display(resolved);
  checkUnchanged(ctx.files, args.path, resolved);
  const stat = await lstatOrNull(resolved.path);
  if (stat === null) throw new ToolError('EXECUTION_FAILED', `${shown} does not exist`);
  let removed = 1;
  if (stat.isDirectory()) {
    await checkTreeWritable(ctx.files, resolved.path, shown, config.maxVisited, () => removed++);
    if (removed > 1 && args.recursive !== true) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${shown} is a folder with ${removed - 1} entries; set recursive: true to delete it with everything in it`,
      );
    }
  }
  const dir = await pinDir(dirname(resolved.path));
  try {
    const entry = dir.entry(basename(resolved.path));
    if (!stat.isDirectory()) await unlink(entry);
    else if (removed === 1) await rmdir(entry);
    else await removeTree(entry, { maxEntries: removed - 1 + config.maxVisited });
    await dir.sync();
  } catch (error) {
    if (error instanceof TreeChangedError) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${shown}: ${error.message}; part of it may be gone`,
        {
          sideEffect: true,
        },
      );
    }
    throw fsError(error, shown);
  } finally {
    await dir.close();
  }
  ctx.files.changed(resolved.path);
  return toolOutput(
    `Deleted ${stat.isDirectory() ? 'the folder ' : ''}${shown}${removed > 1 ? ` and the ${removed - 1} entries in it` : ''}`,
    {
      path: shown,
      type: stat.isDirectory() ? 'directory' : 'file',
      removed,
    },
  );
}
