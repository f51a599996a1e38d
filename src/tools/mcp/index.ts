import { isAbsolute, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import { isInside } from '../../vault/access.ts';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '../../protocol/types.ts';
import { adaptToolList } from './adapt-list.ts';
import { mcpConfigSchema, readServers, type McpServerConfig } from './config.ts';
import { McpConnection } from './connection.ts';
import { oneAtATime } from '../../protocol/one-at-a-time.ts';

/**
 * The `mcp` pack: the tools of configured MCP servers (`tools.mcp.servers`), stdio or Streamable
 * HTTP, through the official SDK client, each as `<server>_<tool>` behind vaultd's policy and
 * approval (dangerous unless configured). Servers start with the daemon and stop with it.
 */
export const mcpPack: ToolPack = {
  name: 'mcp',
  description:
    'the tools of configured MCP servers (stdio and Streamable HTTP), dangerous unless configured',
  configSchema: mcpConfigSchema,
  async start(ctx): Promise<PackHandle> {
    const listeners = new Set<() => void>();
    const notify = (): void => {
      for (const listener of [...listeners]) listener();
    };
    // A server's tools are adapted (their schemas compiled) once per list it gives, off the
    // listing and a tool at a time (adaptToolList gives the event loop turns), with a compiler of
    // their own: a new list frees what the old one compiled. One adaptation runs at a time.
    const adapted = new Map<McpConnection, { source: readonly McpTool[]; tools: Tool[] }>();
    const adaptChanged = oneAtATime(async () => {
      try {
        let changed = false;
        for (const server of servers) {
          const source = server.tools;
          if (adapted.get(server)?.source === source) continue;
          adapted.set(server, { source, tools: await adaptToolList(server, source, ctx.logger) });
          changed = true;
        }
        if (changed) notify();
      } catch (error) {
        // Never an unhandled rejection in the daemon: the tools listed before stay.
        ctx.logger.error({ err: error }, 'MCP tools could not be taken');
      }
    });
    const configs = readServers(ctx.config);
    warnOfVaultRoots(configs, ctx.vault, ctx.logger);
    const servers: McpConnection[] = configs.map(
      (config) => new McpConnection(config, ctx.logger, () => void adaptChanged()),
    );
    try {
      await Promise.all(servers.map((server) => server.start()));
      await adaptChanged();
    } catch (error) {
      await Promise.all(servers.map((server) => server.stop()));
      throw error;
    }
    const tools = (): Tool[] => {
      const out: Tool[] = [];
      const seen = new Map<string, string>();
      for (const server of servers) {
        for (const tool of adapted.get(server)?.tools ?? []) {
          const other = seen.get(tool.name);
          if (other !== undefined) {
            ctx.logger.error(
              { tool: tool.name, servers: [other, server.config.name] },
              'two MCP tools map to one name; give one server another prefix (tools.mcp.servers.<name>.prefix)',
            );
            continue;
          }
          seen.set(tool.name, server.config.name);
          out.push(tool);
        }
      }
      return out;
    };
    return {
      tools,
      onChange(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      async stop() {
        await Promise.all(servers.map((server) => server.stop()));
      },
    };
  },
};

/**
 * Warn about each stdio server given the vault, or a folder above it, as its working directory or
 * as an argument (`/srv/vault`, `--root=/srv`): a filesystem server there acts as vaultd's user on
 * vaultd's state, folders and config, which only vaultd's own tools and sandboxes keep out of reach.
 * A warning, not a refusal: vaultd cannot tell a server's folders from its other arguments.
 * @param servers the configured servers.
 * @param vault the vault's path.
 * @param logger where the warning goes.
 * @returns the names of the servers warned about.
 */
export function warnOfVaultRoots(
  servers: readonly McpServerConfig[],
  vault: string,
  logger: Logger,
): string[] {
  const warned: string[] = [];
  const root = resolve(vault);
  for (const server of servers) {
    if (server.command === undefined) continue;
    const values = [server.cwd, ...server.args.map((a) => a.slice(a.indexOf('=') + 1))];
    const over = values.find((v) => v !== undefined && isAbsolute(v) && isInside(root, resolve(v)));
    if (over === undefined) continue;
    warned.push(server.name);
    logger.warn(
      { server: server.name, path: over, vault: root },
      "MCP server given the vault or a folder above it: it acts as vaultd's user on vaultd's state, folders and config, outside vaultd's checks; give it a folder of its own (docs/tools/mcp.md)",
    );
  }
  return warned;
}
