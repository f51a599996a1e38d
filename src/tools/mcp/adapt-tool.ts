import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { compileGlob } from '../../approval/glob.ts';
import { checkToolSchemas, defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { isRecord } from '../../protocol/names.ts';
import type { JsonSchema, SafetyLevel, Tool } from '../../protocol/types.ts';
import type { SchemaCompiler } from '../../protocol/untrusted-schema.ts';
import type { McpServerConfig } from './config.ts';
import type { McpConnection } from './connection.ts';
import { McpNotSentError } from './not-sent.ts';
import { mapToolName, normaliseToolName } from './tool-name.ts';

/** Text kept of a tool's answer before it is cut. */
const MAX_TEXT = 200_000;

/** Levels from the least to the most strict. */
const STRICTNESS: readonly SafetyLevel[] = ['safe', 'cautious', 'dangerous'];

/**
 * The level of a server's tool: the first `tools` glob that matches the tool's name on the server,
 * and the first that matches it as it ends its vaultd name ({@link normaliseToolName}: `Delete-File`
 * is `delete_file`), the stricter of the two when both match; else the server's `safety`
 * (dangerous unless configured). A server's annotations are hints from a party vaultd does not
 * control and never lower it.
 * @param config the server's config.
 * @param name the tool's name on the server.
 */
export function safetyOf(config: McpServerConfig, name: string): SafetyLevel {
  const tail = normaliseToolName(name);
  let raw: SafetyLevel | undefined;
  let mapped: SafetyLevel | undefined;
  for (const [glob, level] of Object.entries(config.tools)) {
    const matches = compileGlob(glob);
    if (raw === undefined && matches(name)) raw = level;
    if (mapped === undefined && matches(tail)) mapped = level;
    if (raw !== undefined && mapped !== undefined) break;
  }
  if (raw === undefined || mapped === undefined) return raw ?? mapped ?? config.safety;
  return STRICTNESS.indexOf(raw) >= STRICTNESS.indexOf(mapped) ? raw : mapped;
}

/**
 * Declare one of a server's tools as a vaultd tool: named `<prefix>_<tool>`, its input schema
 * validated by Ajv before the call, its output schema kept; `structuredContent` becomes `data`,
 * text content `content`, `isError` an error result.
 * @param server the connection to call through.
 * @param tool the tool as the server listed it and vaultd kept it (its description cut,
 *   list-tools.ts).
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
  const description = [own, `(MCP server ${config.name}, tool ${tool.name}.)`].join('\n\n');
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
            if (error instanceof McpNotSentError) {
              // Never reached the server: did not act, and may be tried again.
              throw new ToolError(
                'EXECUTION_FAILED',
                `MCP server ${config.name}: ${error.message}`,
                { sideEffect: false, recoverable: true, cause: error },
              );
            }
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
