import { isInside } from '../../vault/access.ts';
import { isSystemPath } from '../sandbox/system-view.ts';
import { secretMounts, vaultMountArgs } from '../sandbox/vault-mounts.ts';
import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import { lspConfigSchema, readLspConfig } from './config.ts';
import { ServerPool } from './pool.ts';
import type { LspRuntime } from './session.ts';
import { createLspTools } from './tools.ts';

export { ServerPool } from './pool.ts';
export { readLspConfig, type LspConfig } from './config.ts';
export { toHumanPosition, toLspPosition, splitLines } from './positions.ts';

/**
 * The `lsp` pack: code intelligence through real language servers (diagnostics, symbols, hover,
 * definition, references), all read-only. Servers start lazily per workspace root inside the
 * roots, are shared by calls, stop when idle, start again with backoff after a crash, and are
 * killed with their process groups when the pack stops. Off unless `tools.lsp.enabled: true`.
 */
export const lspPack: ToolPack = {
  name: 'lsp',
  description:
    'code intelligence from real language servers: diagnostics, symbols, hover, definition, references',
  configSchema: lspConfigSchema,
  enabledByDefault: false,
  staticTools: createLspTools(() => undefined),
  async start(ctx): Promise<PackHandle> {
    const config = readLspConfig(ctx.config);
    const files = await ctx.access(config.roots);
    const roots = files.roots.map((root) => root.path);
    // What a sandboxed server is shown (the system folders, the roots) minus vaultd's own files.
    const secrets = await secretMounts(
      files,
      (path) => isSystemPath(path) || roots.some((root) => isInside(path, root)),
      config.runAs,
    );
    const hidden = vaultMountArgs({ ...secrets, readOnly: [] });
    const runtime: LspRuntime = {
      config,
      pool: new ServerPool(config, roots, ctx.logger, hidden),
    };
    const tools = createLspTools(() => runtime);
    return {
      tools: () => tools,
      stop: () => runtime.pool.stop(),
    };
  },
};
