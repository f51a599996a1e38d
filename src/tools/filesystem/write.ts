import { dirname } from 'node:path';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { toolOutput } from '../../protocol/output.ts';
import type { CallFacts, Effects, ResolvedPath, VaultAccess } from '../../protocol/types.ts';
import {
  basisOf,
  checkUnchanged,
  diffStats,
  inScratch,
  readTextFile,
  resolvePath,
  sha256,
  softPreview,
  unifiedDiff,
  PATH_PARAM,
} from './common.ts';
import { readFilesystemConfig } from './config.ts';
import { applyEdits, type Edit } from './edits.ts';
import { fsError, inParent, lstatOrNull, makeFolders, writeAtomic } from './pinned.ts';

const PATH = {
  ...PATH_PARAM,
  description: 'path relative to the vault, or absolute inside a configured writable root',
};

/**
 * Effects of a change to one file: cautious inside a scratch folder, dangerous elsewhere.
 * @param path the path the agent gave.
 * @param facts config and access.
 * @param what says what the call does to the file, for the human.
 */
async function changeEffects(
  path: string,
  facts: CallFacts,
  what: (resolved: ResolvedPath, shown: string) => string,
  idempotent: boolean,
): Promise<Effects> {
  const config = readFilesystemConfig(facts.config);
  const resolved = await facts.files.resolve(path, 'write');
  const shown = facts.files.display(resolved);
  const scratch = await inScratch(facts.files, config, resolved);
  return {
    safety: scratch ? 'cautious' : 'dangerous',
    readOnly: false,
    idempotent,
    reason: `${what(resolved, shown)}${scratch ? ' (in a scratch folder)' : ''}`,
  };
}

/**
 * Create the missing folders above a file, then check that the folder is where it was resolved.
 * @param files the call's access.
 * @param resolved the file.
 */
async function ensureParent(files: VaultAccess, resolved: ResolvedPath): Promise<void> {
  const parent = dirname(resolved.path);
  if ((await lstatOrNull(parent)) !== null) return;
  // Resolve again: the folders to create must be writable and not protected either.
  await files.resolve(parent, 'write');
  await makeFolders(parent);
}

type WriteArgs = {
  path: string;
  content: string;
  create_only?: boolean;
};

/** `write_file`: create or replace a text file, atomically. */
export const writeFile = defineTool<WriteArgs>({
  name: 'write_file',
  description:
    'Create a text file, or replace one, with the given content (UTF-8), atomically; missing folders above it are created. create_only: true fails instead of replacing a file already there. Waits for a human (with a diff) unless the file is in a configured scratch folder.',
  parameters: {
    path: PATH,
    content: { type: 'string' },
    create_only: { type: 'boolean', default: false },
  },
  required: ['path', 'content'],
  safety: 'dangerous',
  categories: ['filesystem'],
  effects: (args, facts) =>
    changeEffects(
      args.path,
      facts,
      (r, shown) => (r.exists ? `replaces ${shown}` : `creates ${shown}`),
      args.create_only !== true,
    ),
  preview: softPreview(async (args: WriteArgs, ctx) => {
    const resolved = await ctx.files.resolve(args.path, 'write');
    const shown = ctx.files.display(resolved);
    const config = readFilesystemConfig(ctx.config);
    const current = await readTextFile(resolved, shown, config.maxEditBytes).catch(() => undefined);
    if (current === undefined) {
      return {
        kind: 'text',
        text: `Replace ${shown} (not a text file vaultd can show) with ${Buffer.byteLength(args.content)} bytes of text`,
      };
    }
    if (current !== null && args.create_only === true) {
      return {
        kind: 'text',
        text: `${shown} exists: with create_only this call will fail and change nothing`,
      };
    }
    return {
      kind: 'diff',
      text: unifiedDiff(shown, current?.text ?? null, args.content),
      basis: [basisOf(resolved, current)],
    };
  }),
  async handler(args, ctx) {
    const config = readFilesystemConfig(ctx.config);
    const resolved = await resolvePath(ctx.files, args.path, 'write', true);
    const shown = ctx.files.display(resolved);
    checkUnchanged(ctx.files, args.path, resolved);
    const bytes = Buffer.from(args.content, 'utf8');
    if (bytes.length > config.maxWriteBytes) {
      throw new ToolError(
        'INVALID_PARAMS',
        `content is ${bytes.length} bytes, over max_write_bytes ${config.maxWriteBytes}`,
      );
    }
    try {
      await ensureParent(ctx.files, resolved);
      const { replaced } = await inParent(resolved.path, (dir, name) =>
        writeAtomic(dir, name, bytes, { createOnly: args.create_only === true }),
      );
      ctx.files.changed(resolved.path);
      const data = { path: shown, bytes: bytes.length, created: !replaced, sha256: sha256(bytes) };
      return toolOutput(
        `${replaced ? 'Replaced' : 'Created'} ${shown} (${bytes.length} bytes)`,
        data,
      );
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new ToolError(
          'EXECUTION_FAILED',
          `${shown} already exists and create_only is set; nothing was written`,
        );
      }
      throw fsError(error, shown);
    }
  },
});

type EditArgs = {
  path: string;
  edits: Edit[];
  dry_run?: boolean;
};

/** `edit_file`: exact text replacements, each matching once; dry_run shows the diff only. */
export const editFile = defineTool<EditArgs>({
  name: 'edit_file',
  description:
    'Change a text file by exact replacements: each edit replaces old_text, which must occur exactly once in the file (as changed by the edits before it), with new_text. An edit that matches nothing or more than once fails the whole call and nothing is written; add surrounding lines to old_text to make it unique. dry_run: true returns the diff without writing. Returns a unified diff.',
  parameters: {
    path: PATH,
    edits: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      items: {
        type: 'object',
        properties: {
          old_text: { type: 'string', minLength: 1 },
          new_text: { type: 'string' },
        },
        required: ['old_text', 'new_text'],
        additionalProperties: false,
      },
    },
    dry_run: { type: 'boolean', default: false },
  },
  required: ['path', 'edits'],
  safety: 'dangerous',
  cacheable: false,
  categories: ['filesystem'],
  effects: async (args, facts) =>
    args.dry_run === true
      ? { safety: 'safe', readOnly: true, idempotent: true, reason: 'dry run: shows the diff only' }
      : changeEffects(args.path, facts, (_r, shown) => `edits ${shown}`, false),
  preview: softPreview(async (args: EditArgs, ctx) => {
    if (args.dry_run === true) return undefined;
    const resolved = await ctx.files.resolve(args.path, 'write');
    const shown = ctx.files.display(resolved);
    const config = readFilesystemConfig(ctx.config);
    const current = await readTextFile(resolved, shown, config.maxEditBytes);
    if (current === null)
      return { kind: 'text', text: `${shown} does not exist: this call will fail` };
    try {
      const after = applyEdits(current.text, args.edits);
      return {
        kind: 'diff',
        text: unifiedDiff(shown, current.text, after),
        basis: [basisOf(resolved, current)],
      };
    } catch (error) {
      return {
        kind: 'text',
        text: `This call will fail: ${(error as Error).message}`,
        basis: [basisOf(resolved, current)],
      };
    }
  }),
  async handler(args, ctx) {
    const config = readFilesystemConfig(ctx.config);
    const resolved = await resolvePath(
      ctx.files,
      args.path,
      args.dry_run === true ? 'read' : 'write',
      true,
    );
    const shown = ctx.files.display(resolved);
    if (args.dry_run !== true) checkUnchanged(ctx.files, args.path, resolved);
    const current = await readTextFile(resolved, shown, config.maxEditBytes);
    if (current === null)
      throw new ToolError('EXECUTION_FAILED', `${shown} does not exist; create it with write_file`);
    const after = applyEdits(current.text, args.edits);
    const diff = unifiedDiff(shown, current.text, after);
    const stats = diffStats(diff);
    const data = {
      path: shown,
      edits: args.edits.length,
      dry_run: args.dry_run === true,
      added_lines: stats.added,
      removed_lines: stats.removed,
      diff,
    };
    if (args.dry_run === true) {
      return toolOutput(
        `Dry run: ${shown} would change (+${stats.added} −${stats.removed} lines):\n${diff}`,
        data,
      );
    }
    try {
      await inParent(resolved.path, (dir, name) =>
        writeAtomic(dir, name, after, { mode: current.mode }),
      );
    } catch (error) {
      throw fsError(error, shown);
    }
    ctx.files.changed(resolved.path);
    return toolOutput(`Edited ${shown} (+${stats.added} −${stats.removed} lines):\n${diff}`, {
      ...data,
      sha256: sha256(after),
    });
  },
});

/** `create_directory`: a folder and any missing folders above it. */
export const createDirectory = defineTool<{ path: string }>({
  name: 'create_directory',
  description:
    'Create a folder in the vault (or a configured writable root), with any missing folders above it. Succeeds when the folder is already there.',
  parameters: { path: PATH },
  required: ['path'],
  safety: 'cautious',
  idempotent: true,
  categories: ['filesystem'],
  async handler(args, ctx) {
    const resolved = await ctx.files.resolve(args.path, 'write');
    const shown = ctx.files.display(resolved);
    checkUnchanged(ctx.files, args.path, resolved);
    const before = await lstatOrNull(resolved.path);
    if (before !== null && !before.isDirectory()) {
      throw new ToolError('EXECUTION_FAILED', `${shown} exists and is not a folder`);
    }
    if (before === null) {
      try {
        await makeFolders(resolved.path);
      } catch (error) {
        if (error instanceof ToolError) throw error;
        throw fsError(error, shown);
      }
      // A link swapped in above it while it was made would put it elsewhere: look again.
      const again = await ctx.files.resolve(args.path, 'write');
      if (again.path !== resolved.path) {
        throw new ToolError(
          'PERMISSION_DENIED',
          `${shown} changed while the call ran (a link was swapped in)`,
          { sideEffect: true },
        );
      }
      ctx.files.changed(resolved.path);
    }
    return toolOutput(before === null ? `Created folder ${shown}` : `${shown} was already there`, {
      path: shown,
      created: before === null,
    });
  },
});
