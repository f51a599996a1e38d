import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { compileGlob } from '../../approval/glob.ts';
import { checkToolSchemas, defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { isRecord } from '../../protocol/names.ts';
import type { JsonSchema, SafetyLevel, Tool } from '../../protocol/types.ts';
import type { SchemaCompiler } from '../../protocol/untrusted-schema.ts';
import type { McpServerConfig } from './config.ts';
import type { McpConnection } from './connection.ts';
import { mapToolName } from './tool-name.ts';

/** Text kept of a tool's answer before it is cut. */
const MAX_TEXT = 200_000;

/**
 * The level of a server's tool: the first `tools` glob (the server's own tool names) that
 * matches, else the server's `safety` (dangerous unless configured). A server's annotations are
 * hints from a party vaultd does not control and never lower it.
 * @param config the server's config.
 * @param name the tool's name on the server.
 */
export function safetyOf(config: McpServerConfig, name: string): SafetyLevel {
  for (const [glob, level] of Object.entries(config.tools)) {
    if (compileGlob(glob)(name)) return level;
  }
  return config.safety;
}

/**
 * Characters of a server's description of a tool that vaultd keeps: it is listed by `vaultd
 * tools`, exported to agents and kept in memory for each tool, and a server may send megabytes.
 */
const MAX_DESCRIPTION_CHARS = 4000;

/**
 * Declare one of a server's tools as a vaultd tool: named `<prefix>_<tool>`, its input schema
 * validated by Ajv before the call, its output schema kept; `structuredContent` becomes `data`,
 * text content `content`, `isError` an error result.
 * @param server the connection to call through.
 * @param tool the tool as the server listed it.
 * @param compile what compiles its schemas: `makeUntrustedCompiler()`'s, one per tool list.
 */
export function adaptTool(server: McpConnection, tool: McpTool, compile: SchemaCompiler): Tool {
  const config = server.config;
  const safety = safetyOf(config, tool.name);
  const hints = tool.annotations;
  const own = (
    tool.description ??
    tool.title ??
    `Tool ${tool.name} of MCP server ${config.name}.`
  ).trim();
  const description = [
    own.length > MAX_DESCRIPTION_CHARS
      ? `${own.slice(0, MAX_DESCRIPTION_CHARS)}… (cut at ${MAX_DESCRIPTION_CHARS} characters)`
      : own,
    `(MCP server ${config.name}, tool ${tool.name}.)`,
  ].join('\n\n');
  // A server's schema Ajv cannot compile makes that one tool unlisted, said when it is listed.
  return checkToolSchemas(
    defineTool(
      {
        name: mapToolName(config.prefix, tool.name),
        description,
        input: tool.inputSchema as JsonSchema,
        ...(isRecord(tool.outputSchema) ? { outputSchema: tool.outputSchema as JsonSchema } : {}),
        safety,
        categories: ['mcp', `mcp:${config.name}`],
        // Read-only only when the operator made it safe and the server says so too.
        readOnly: safety === 'safe' && hints?.readOnlyHint === true,
        idempotent: safety === 'safe' && hints?.idempotentHint === true,
        openWorld: hints?.openWorldHint !== false,
        async handler(args, ctx) {
          let result: CallToolResult;
          try {
            result = await server.call(tool.name, args, {
              signal: ctx.signal,
              // vaultd's own timeout aborts the signal; the SDK's is a backstop just past it.
              timeoutMs: 24 * 3_600_000,
              onProgress: (p) =>
                ctx.progress({
                  ...(p.message === undefined ? {} : { message: p.message }),
                  ...(p.total !== undefined && p.total > 0
                    ? { fraction: Math.min(1, p.progress / p.total) }
                    : {}),
                }),
            });
          } catch (error) {
            if (ctx.signal.aborted) throw error;
            throw new ToolError(
              'EXECUTION_FAILED',
              `MCP server ${config.name}: ${(error as Error).message}`,
              {
                // A request the server may have received may have acted.
                sideEffect: safety !== 'safe',
              },
            );
          }
          const text = textOf(result);
          if (result.isError === true) {
            throw new ToolError('EXECUTION_FAILED', text === '' ? `${tool.name} failed` : text, {
              sideEffect: safety !== 'safe',
              ...(result.structuredContent === undefined ? {} : { data: result.structuredContent }),
            });
          }
          if (result.structuredContent !== undefined) {
            return text === '' ? result.structuredContent : { ...result.structuredContent };
          }
          return text;
        },
      },
      { compile },
    ),
  );
}

function textOf(result: CallToolResult): string {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    if (item.type === 'text') parts.push(item.text);
    else if (item.type === 'image' || item.type === 'audio')
      parts.push(`(${item.type}, ${item.mimeType})`);
    else if (item.type === 'resource_link') parts.push(`${item.name}: ${item.uri}`);
    else if (item.type === 'resource') {
      const resource = item.resource as { uri: string; text?: string };
      parts.push(resource.text ?? `(resource ${resource.uri})`);
    }
  }
  const text = parts.join('\n\n');
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}\n… (cut)` : text;
}
