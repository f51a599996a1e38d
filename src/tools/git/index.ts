import { mkdir, realpath, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import type { Tool } from '../../protocol/types.ts';
import { RuntimeHolder } from './common.ts';
import { gitConfigSchema, readGitConfig } from './config.ts';
import { pushTool } from './push.ts';
import { readTools } from './read-tools.ts';
import { writeTools } from './write-tools.ts';

/**
 * The nine git tools, sharing one runtime holder.
 * @param holder set when the pack starts.
 */
export function gitTools(holder: RuntimeHolder): Tool[] {
  return [...readTools(holder), ...writeTools(holder), pushTool(holder)];
}

const listed = gitTools(new RuntimeHolder());

/**
 * The `git` pack: git_status, git_diff, git_log, git_show, git_branch, git_checkout, git_add,
 * git_commit and git_push through the system git, by argument vector, on repositories inside
 * the vault and the configured roots, with every repository setting that runs a program
 * neutralised.
 */
export const gitPack: ToolPack = {
  name: 'git',
  description:
    'version control through the system git, on repositories inside the vault and configured roots',
  configSchema: gitConfigSchema,
  // Opt-in: checkout rewrites notes at the cautious level, and most vaults are not repositories.
  enabledByDefault: false,
  staticTools: listed,
  async start(ctx): Promise<PackHandle> {
    await ctx.access(readGitConfig(ctx.config).roots);
    // The HOME of every git process: emptied at each start, so nothing left there is read.
    const home = join(ctx.stateDir, 'home');
    await rm(home, { recursive: true, force: true });
    await mkdir(home, { recursive: true, mode: 0o700 });
    const holder = new RuntimeHolder();
    holder.set({
      home,
      state: await realpath(dirname(dirname(ctx.stateDir))).catch(() => undefined),
    });
    const tools = gitTools(holder);
    return {
      tools: () => tools,
      reload: async (config) => {
        await ctx.access(readGitConfig(config).roots);
      },
      stop: async () => undefined,
    };
  },
};
