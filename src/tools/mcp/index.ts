import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '../../protocol/types.ts';
import { makeUntrustedCompiler } from '../../protocol/untrusted-schema.ts';
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
    // A server's tools are adapted (their schemas compiled) once per list it gives, with a compiler
    // of their own: a new list frees what the old one compiled.
    const adapted = new WeakMap<readonly McpTool[], Tool[]>();
    const adaptList = (server: McpConnection): Tool[] => {
      let list = adapted.get(server.tools);
      if (list !== undefined) return list;
      list = [];
      const compile = makeUntrustedCompiler();
      for (const tool of server.tools) {
        try {
          list.push(adaptTool(server, tool, compile));
        } catch (error) {
          ctx.logger.warn(
            { err: error, server: server.config.name, tool: String(tool.name).slice(0, 200) },
            'MCP tool left out: its declaration is not usable',
          );
        }
      }
      adapted.set(server.tools, list);
      return list;
    };
    const tools = (): Tool[] => {
      const out: Tool[] = [];
      const seen = new Map<string, string>();
      for (const server of servers) {
        for (const tool of adaptList(server)) {
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
