import type { ToolPack } from '../protocol/pack.ts';
import type { Tool } from '../protocol/types.ts';
import { webPack } from './search-web/pack.ts';
import { notifyPack } from './send-notification/pack.ts';
import { mcpPack } from './mcp/index.ts';
import { commandsPack } from './commands/index.ts';
import { gitPack } from './git/index.ts';
import { filesystemPack } from './filesystem/index.ts';
import { lspPack } from './lsp/index.ts';
import { shellPack } from './shell/index.ts';

/** The packs vaultd ships with, in the order they start: adding a pack is one line here. */
export const BUILTIN_PACKS: readonly ToolPack[] = [
  webPack,
  notifyPack,
  mcpPack,
  commandsPack,
  gitPack,
  filesystemPack,
  lspPack,
  shellPack,
];

/**
 * The tools of the built-in packs that run without any config, as declared (for listings and
 * tests; a running daemon takes its tools from the packs it started).
 */
export function builtinTools(): Tool[] {
  return BUILTIN_PACKS.filter((pack) => pack.enabledByDefault !== false).flatMap((pack) => [
    ...(pack.staticTools ?? []),
  ]);
}
