import { lstat, readdir } from 'node:fs/promises';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { toolOutput } from '../../protocol/output.ts';
import { readFilesystemConfig } from './config.ts';
import { fsError, inParent, lstatOrNull, pinDir, swappedIn } from './pinned.ts';
import { walk, type WalkEntry } from './walk.ts';
import { PATH_PARAM as PATH, READING_TOOL } from './common.ts';

/** One entry of a listing. */
interface Listed {
  path: string;
  type: WalkEntry['type'];
  size: number | null;
  modified: string | null;
}

/** `list_directory`: a folder's entries with type, size and time; recursive within bounds. */
export const listDirectory = defineTool<{
  path?: string;
  recursive?: boolean;
  max_entries?: number;
}>({
  name: 'list_directory',
  description:
    'List a folder of the vault (or a configured root): each entry with its type (file, directory, symlink), size in bytes and modification time. recursive: true goes into sub-folders (never through symbolic links), up to max_depth levels; at most max_entries entries (default 200).',
  parameters: {
    path: { ...PATH, default: '.' },
    recursive: { type: 'boolean', default: false },
    max_entries: { type: 'integer', minimum: 1, maximum: 100_000, default: 200 },
  },
  ...READING_TOOL,
  async handler(args, ctx) {
    const config = readFilesystemConfig(ctx.config);
    const resolved = await ctx.files.resolve(args.path ?? '.', 'read');
    const shown = ctx.files.display(resolved);
    const stat = await lstatOrNull(resolved.path);
    if (stat?.isSymbolicLink() === true) throw swappedIn(shown);
    if (stat === null) throw new ToolError('EXECUTION_FAILED', `${shown} does not exist`);
    if (!stat.isDirectory()) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${shown} is a file, not a folder; use file_info or read_file`,
      );
    }
    const max = Math.min(args.max_entries ?? 200, config.maxEntries);
    const entries: Listed[] = [];
    let full = false;
    const cut = await walk(
      ctx.files,
      resolved.path,
      {
        maxDepth: args.recursive === true ? config.maxDepth : 0,
        maxVisited: config.maxVisited,
        signal: ctx.signal,
        mode: 'read',
      },
      async (entry) => {
        if (entries.length >= max) {
          full = true;
          return false;
        }
        const s = await lstatOrNull(entry.at);
        entries.push({
          path: entry.relative,
          type: entry.type,
          size: s === null || entry.type === 'directory' ? null : s.size,
          modified: s === null ? null : s.mtime.toISOString(),
        });
        return true;
      },
    );
    const depthCut = cut === 'depth' && args.recursive === true;
    const truncated = full || cut === 'count' || cut === 'time' || depthCut;
    const lines = entries.map(
      (e) =>
        `${e.type === 'directory' ? 'dir ' : e.type === 'symlink' ? 'link' : e.type === 'file' ? 'file' : 'other'}  ${e.path}${e.type === 'directory' ? '/' : ''}${e.size === null ? '' : `  (${e.size} bytes)`}`,
    );
    const why = full
      ? max < config.maxEntries
        ? `more than ${max} entries: ask for more with max_entries (at most ${config.maxEntries}), or list a sub-folder`
        : `more than ${max} entries, the most a listing holds here (tools.filesystem.max_entries): list a sub-folder`
      : cut === 'depth' && args.recursive === true
        ? `folders deeper than ${config.maxDepth} levels not listed`
        : cut === 'count' || cut === 'time'
          ? 'the listing hit its bound before the end'
          : '';
    const head = `${shown}: ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}${truncated ? ` (cut: ${why})` : ''}`;
    return toolOutput([head, ...lines].join('\n'), {
      path: shown,
      entries,
      truncated,
      ...(truncated ? { truncated_reason: why } : {}),
    });
  },
});

/** `file_info`: what is at a path (type, size, times, mode) without reading it. */
export const fileInfo = defineTool<{ path: string }>({
  name: 'file_info',
  description:
    'Tell what is at a path of the vault (or a configured root) without reading it: type, size in bytes, modification and creation time, permission bits, and whether tools may write it. For a folder, the number of its entries.',
  parameters: { path: PATH },
  required: ['path'],
  ...READING_TOOL,
  async handler(args, ctx) {
    const resolved = await ctx.files.resolve(args.path, 'read');
    const shown = ctx.files.display(resolved);
    let writable = true;
    try {
      await ctx.files.resolve(args.path, 'write');
    } catch {
      writable = false;
    }
    const stat = await inParent(resolved.path, async (dir, name) => {
      try {
        return await lstat(dir.entry(name));
      } catch (error) {
        throw fsError(error, shown);
      }
    }).catch(async (error: unknown) => {
      // The root itself has no parent inside a root: look at it directly.
      if (resolved.relative === '.') return lstat(resolved.path);
      throw error;
    });
    const type = stat.isSymbolicLink()
      ? 'symlink'
      : stat.isDirectory()
        ? 'directory'
        : stat.isFile()
          ? 'file'
          : 'other';
    let entries: number | undefined;
    if (type === 'directory') {
      const dir = await pinDir(resolved.path);
      try {
        entries = (await readdir(dir.entry(''))).length;
      } finally {
        await dir.close();
      }
    }
    const data = {
      path: shown,
      root: resolved.root.name,
      type,
      size: stat.size,
      modified: stat.mtime.toISOString(),
      created: stat.birthtime.toISOString(),
      mode: (stat.mode & 0o7777).toString(8).padStart(4, '0'),
      writable,
      ...(entries === undefined ? {} : { entries }),
    };
    return toolOutput(
      `${shown}: ${type}, ${type === 'directory' ? `${entries ?? 0} entries` : `${stat.size} bytes`}, modified ${data.modified}, mode ${data.mode}${writable ? '' : ', read-only for tools'}`,
      data,
    );
  },
});
