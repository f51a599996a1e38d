import { createHash } from 'node:crypto';
import type * as DiffModule from 'diff';
import { createRequire } from 'node:module';
import { isAbsolute, resolve } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';
import type {
  Preview,
  PreviewBasis,
  PreviewContext,
  ResolvedPath,
  VaultAccess,
} from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { readUpTo } from '../../vault/read-regular.ts';
import type { FilesystemConfig } from './config.ts';
import { checkSingleLink, fsError, inParent, openForRead } from './pinned.ts';

/** The `path` parameter of the pack's tools. */
export const PATH_PARAM = {
  type: 'string',
  minLength: 1,
  maxLength: 4096,
  description: 'path relative to the vault, or absolute inside a configured root',
} as const;

/**
 * What every reading tool of the pack declares: safe, read-only, and never answered from the
 * cache, because files change under the agent (its own writes, a human's edits).
 */
export const READING_TOOL = {
  safety: 'safe',
  readOnly: true,
  idempotent: true,
  cacheable: false,
  categories: ['filesystem'],
} as const;

/** Bytes looked at to tell text from binary. */
const SNIFF_BYTES = 8192;

/**
 * Resolve a path for a tool and refuse a root itself where the tool would replace or remove it.
 * @param files the call's access.
 * @param path the path the agent gave.
 * @param mode read or write.
 * @param notRoot refuse the root folder itself (delete, move).
 */
export async function resolvePath(
  files: VaultAccess,
  path: string,
  mode: 'read' | 'write',
  notRoot = false,
): Promise<ResolvedPath> {
  const resolved = await files.resolve(path, mode);
  if (notRoot && resolved.relative === '.') {
    throw new ToolError(
      'PERMISSION_DENIED',
      `${path} is the root folder ${resolved.root.name} itself, which no tool may move or delete`,
    );
  }
  return resolved;
}

/**
 * Whether a path is inside one of the configured scratch folders (where writes are cautious).
 * @param files the call's access.
 * @param config the pack's config.
 * @param resolved the path.
 */
export async function inScratch(
  files: VaultAccess,
  config: FilesystemConfig,
  resolved: ResolvedPath,
): Promise<boolean> {
  for (const folder of config.scratch) {
    try {
      const scratch = await files.resolve(folder, 'write');
      if (isInside(resolved.path, scratch.path)) return true;
    } catch {
      // A scratch folder outside the writable roots is no scratch folder.
    }
  }
  return false;
}

/**
 * Refuse a change whose path leads somewhere else now than when its call was decided. The executor
 * hands a handler the canonical path (links resolved, see `src/execute/canonical-paths.ts`), the
 * one the policy, the grants, the human and the scratch check saw; read by name it is the real
 * path it had then. A real path that differs now means a link was swapped in on the way (an
 * agent's job renaming `Drafts` and linking `Drafts` to `Notes` while the call waited for its
 * slot), and the call would change a file nobody allowed. Where the handler pins the folder of
 * the real path checked here, nothing can change after this check.
 * @param files the call's access.
 * @param path the path the call was decided with (canonical when it comes from the executor).
 * @param resolved its real path now.
 * @throws ToolError `PERMISSION_DENIED` when they differ.
 */
export function checkUnchanged(files: VaultAccess, path: string, resolved: ResolvedPath): void {
  const first = files.roots[0];
  if (first === undefined) return;
  const decided = isAbsolute(path) ? resolve(path) : resolve(first.path, path);
  if (decided === resolved.path) return;
  throw new ToolError(
    'PERMISSION_DENIED',
    `${path} changed while the call waited: it now leads to ${files.display(resolved)} (a link was swapped in), not to the path that was allowed; nothing was done`,
  );
}

/**
 * SHA-256 of bytes, hex.
 * @param data the bytes.
 */
export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Whether bytes look binary: a NUL byte, or not UTF-8, in the first 8 KiB.
 * @param bytes the start of a file.
 * @param complete whether these are all of the file (else a character cut at the end is fine).
 */
export function looksBinary(bytes: Uint8Array, complete: boolean): boolean {
  const sample = bytes.subarray(0, SNIFF_BYTES);
  if (sample.includes(0)) return true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample, {
      stream: !complete || bytes.length > SNIFF_BYTES,
    });
    return false;
  } catch {
    return true;
  }
}

/** A file's content as text, read through its pinned folder. */
export interface TextFile {
  readonly text: string;
  readonly sha256: string;
  readonly mode: number;
}

/**
 * Read a whole text file (for edits, copies and previews), refusing links swapped in at its name,
 * folders, binary files and files over `maxBytes`.
 * @param resolved the file.
 * @param shown its path for messages.
 * @param maxBytes the size cap.
 * @returns the text, or null when there is no file.
 */
export async function readTextFile(
  resolved: ResolvedPath,
  shown: string,
  maxBytes: number,
): Promise<TextFile | null> {
  return inParent(resolved.path, async (dir, name) => {
    let handle;
    try {
      handle = await openForRead(dir, name, shown);
    } catch (error) {
      if (error instanceof ToolError && /does not exist/.test(error.message)) return null;
      throw error;
    }
    try {
      const stat = await handle.stat();
      if (stat.isDirectory())
        throw new ToolError('EXECUTION_FAILED', `${shown} is a folder, not a file`);
      if (!stat.isFile()) throw new ToolError('EXECUTION_FAILED', `${shown} is not a regular file`);
      checkSingleLink(stat.nlink, shown);
      if (stat.size > maxBytes) {
        throw new ToolError(
          'EXECUTION_FAILED',
          `${shown} is ${stat.size} bytes, over the ${maxBytes} bytes this tool handles`,
        );
      }
      // Never past the cap, even when the file grows while it is read.
      const bytes = await readUpTo(handle, maxBytes, stat.size);
      if (bytes === null) {
        throw new ToolError(
          'EXECUTION_FAILED',
          `${shown} grew past the ${maxBytes} bytes this tool handles while it was read`,
        );
      }
      if (looksBinary(bytes, true)) {
        throw new ToolError('EXECUTION_FAILED', `${shown} is a binary file (or not UTF-8 text)`);
      }
      return { text: bytes.toString('utf8'), sha256: sha256(bytes), mode: stat.mode & 0o7777 };
    } catch (error) {
      throw fsError(error, shown);
    } finally {
      await handle.close();
    }
  });
}

const require = createRequire(import.meta.url);
let diff: typeof DiffModule | undefined;

/**
 * A unified diff between two versions of a file.
 * @param shown the file's path as agents see it.
 * @param before the old text ('' for a new file).
 * @param after the new text ('' for a deleted file).
 */
export function unifiedDiff(shown: string, before: string | null, after: string | null): string {
  // Loaded on first use: only previews and results of writes need it, and loading it was 20 ms of
  // every start-up (bench/README.md, item 30).
  diff ??= require('diff') as typeof DiffModule;
  return diff.createTwoFilesPatch(
    before === null ? '/dev/null' : `a/${shown}`,
    after === null ? '/dev/null' : `b/${shown}`,
    before ?? '',
    after ?? '',
    undefined,
    undefined,
    { context: 3 },
  );
}

/**
 * Lines added and removed in a unified diff.
 * @param diff the diff text.
 */
export function diffStats(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of diff.split('\n')) {
    if (line.startsWith('+++') || line.startsWith('---')) continue;
    if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  return { added, removed };
}

/**
 * The basis entry of a file a preview was made from.
 * @param resolved the file.
 * @param file its content now, or null when absent.
 */
export function basisOf(resolved: ResolvedPath, file: TextFile | null): PreviewBasis {
  return { path: resolved.path, sha256: file === null ? null : file.sha256 };
}

/**
 * A preview that tells the human when the call will fail (a path refused, a file missing) instead
 * of showing nothing.
 * @param make the preview.
 */
export function softPreview<A>(
  make: (args: A, ctx: PreviewContext) => Promise<Preview | undefined>,
): (args: A, ctx: PreviewContext) => Promise<Preview | undefined> {
  return async (args, ctx) => {
    try {
      return await make(args, ctx);
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
      return { kind: 'text', text: `This call will fail: ${error.message}` };
    }
  };
}
