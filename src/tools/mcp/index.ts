import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '../../protocol/types.ts';
import { adaptToolList } from './adapt-list.ts';
import { mcpConfigSchema, readServers } from './config.ts';
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
    const servers: McpConnection[] = readServers(ctx.config).map(
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
