import { isAbsolute, resolve } from 'node:path';
import type { PackContext, PackHandle, PackRoot, ToolPack } from '../../protocol/pack.ts';
import { fileInfo, listDirectory } from './browse.ts';
import { copyFile, deleteFile, moveFile } from './change.ts';
import { filesystemConfigSchema, readFilesystemConfig } from './config.ts';
import { guarded } from './guard.ts';
import { readFile } from './read-file.ts';
import { searchFiles } from './search.ts';
import { createDirectory, editFile, writeFile } from './write.ts';

/** The tools of the filesystem pack, in the order listings show them. */
export const FILESYSTEM_TOOLS = Object.freeze([
  guarded(readFile),
  guarded(listDirectory),
  guarded(searchFiles),
  guarded(fileInfo),
  guarded(writeFile),
  guarded(editFile),
  guarded(createDirectory),
  guarded(copyFile),
  guarded(moveFile),
  guarded(deleteFile),
]);

/**
 * The configured roots as the pack's access takes them: relative paths are relative to the vault.
 * @param ctx the pack's context.
 * @param section its config section.
 */
function rootsOf(vault: string, section: Readonly<Record<string, unknown>>): PackRoot[] {
  return readFilesystemConfig(section).roots.map((r) => ({
    ...r,
    path: isAbsolute(r.path) ? r.path : resolve(vault, r.path),
  }));
}

/**
 * The `filesystem` pack: read, search, write, edit, copy, move and delete files of the vault and
 * configured roots, every path confined on its real path (see docs/tools/filesystem.md). Off
 * unless `tools.filesystem.enabled: true`.
 */
export const filesystemPack: ToolPack = {
  name: 'filesystem',
  description:
    'read, search and change files of the vault and configured roots, confined and previewed',
  configSchema: filesystemConfigSchema,
  enabledByDefault: false,
  staticTools: FILESYSTEM_TOOLS,
  async start(ctx: PackContext): Promise<PackHandle> {
    await ctx.access(rootsOf(ctx.vault, ctx.config));
    return {
      tools: () => FILESYSTEM_TOOLS,
      // New roots take effect at once; the rest of the section is read at each call.
      reload: async (config) => {
        await ctx.access(rootsOf(ctx.vault, config));
      },
      stop: async () => undefined,
    };
  },
};
