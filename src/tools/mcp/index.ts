import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import type { Tool } from '../../protocol/types.ts';
import { adaptTool } from './adapt-tool.ts';
import { mcpConfigSchema, readServers } from './config.ts';
import { McpConnection } from './connection.ts';

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
    const servers = readServers(ctx.config).map(
      (config) => new McpConnection(config, ctx.logger, notify),
    );
    try {
      await Promise.all(servers.map((server) => server.start()));
    } catch (error) {
      await Promise.all(servers.map((server) => server.stop()));
      throw error;
    }
    let cache: { key: string; tools: Tool[] } | undefined;
    const tools = (): Tool[] => {
      const key = JSON.stringify(servers.map((s) => s.tools.map((t) => [t.name, t.inputSchema])));
      if (cache?.key === key) return cache.tools;
      const out: Tool[] = [];
      const seen = new Map<string, string>();
      for (const server of servers) {
        for (const tool of server.tools) {
          let adapted: Tool;
          try {
            adapted = adaptTool(server, tool);
          } catch (error) {
            ctx.logger.warn(
              { err: error, server: server.config.name, tool: tool.name },
              'MCP tool left out: its declaration is not usable',
            );
            continue;
          }
          const other = seen.get(adapted.name);
          if (other !== undefined) {
            ctx.logger.error(
              { tool: adapted.name, servers: [other, server.config.name] },
              'two MCP tools map to one name; give one server another prefix (tools.mcp.servers.<name>.prefix)',
            );
            continue;
          }
          seen.set(adapted.name, server.config.name);
          out.push(adapted);
        }
      }
      cache = { key, tools: out };
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
