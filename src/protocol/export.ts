import type { JsonSchema, Tool } from './types.ts';

/** A tool in the OpenAI Chat Completions function-tool format. */
export interface OpenAITool {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description: string;
    readonly parameters: JsonSchema;
    readonly strict?: boolean;
  };
}

/** A tool in the Anthropic Messages API format. */
export interface AnthropicTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: JsonSchema;
}

/** Behaviour hints of an MCP tool. */
export interface McpToolAnnotations {
  readonly title?: string;
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint?: boolean;
}

/** A tool in the Model Context Protocol `tools/list` format. */
export interface McpTool {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: JsonSchema;
  readonly annotations: McpToolAnnotations;
}

/** Options of {@link toOpenAITools}. */
export interface OpenAIExportOptions {
  /**
   * Ask for OpenAI strict mode. A tool gets `strict: true` only when its schema qualifies (every
   * object closed, every property required), otherwise `strict: false`. Default: no `strict` key.
   */
  readonly strict?: boolean;
}

/**
 * Export tools as OpenAI function tools (`{type: 'function', function: {name, description, parameters}}`).
 * @param tools declared tools, e.g. `registry.list()`.
 * @param options `strict`: see {@link OpenAIExportOptions}; default off.
 */
export function toOpenAITools(
  tools: readonly Tool<unknown>[],
  options: OpenAIExportOptions = {},
): OpenAITool[] {
  return tools.map((tool) => {
    const parameters = copySchema(tool.inputSchema);
    return {
      type: 'function',
      function: {
        name: tool.name,
        description: tool.description,
        parameters,
        ...(options.strict === true ? { strict: isStrictCompatible(parameters) } : {}),
      },
    };
  });
}

/**
 * Export tools as Anthropic tools (`{name, description, input_schema}`).
 * @param tools declared tools, e.g. `registry.list()`.
 */
export function toAnthropicTools(tools: readonly Tool<unknown>[]): AnthropicTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: copySchema(tool.inputSchema),
  }));
}

/**
 * Export tools as MCP tools, with annotations derived from the declaration (the most dangerous a
 * call of the tool can be): `readOnlyHint` from `readOnly`, `destructiveHint` from safety
 * `dangerous`, `idempotentHint` from `idempotent`, `openWorldHint` from `openWorld` (or the `web`
 * and `network` categories). `outputSchema` is included when the tool declares an object-typed one.
 * @param tools declared tools, e.g. `registry.list()`.
 */
export function toMcpTools(tools: readonly Tool<unknown>[]): McpTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: copySchema(tool.inputSchema),
    ...(tool.outputSchema !== undefined && tool.outputSchema['type'] === 'object'
      ? { outputSchema: copySchema(tool.outputSchema) }
      : {}),
    annotations: {
      readOnlyHint: tool.readOnly,
      destructiveHint: tool.safety === 'dangerous',
      idempotentHint: tool.idempotent,
      openWorldHint:
        tool.openWorld ?? (tool.categories.includes('web') || tool.categories.includes('network')),
    },
  }));
}

// Exports are handed to other programs that may add keys; never give them our frozen schemas.
function copySchema(schema: JsonSchema): JsonSchema {
  return structuredClone(schema);
}

/** Whether OpenAI strict mode accepts a schema: every object closed and all its properties required. */
function isStrictCompatible(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(isStrictCompatible);
  if (typeof schema !== 'object' || schema === null) return true;
  const node = schema as Record<string, unknown>;
  const properties = node['properties'];
  const isObject =
    node['type'] === 'object' || (Array.isArray(node['type']) && node['type'].includes('object'));
  if (isObject) {
    if (node['additionalProperties'] !== false) return false;
    const keys =
      typeof properties === 'object' && properties !== null ? Object.keys(properties) : [];
    const required = Array.isArray(node['required']) ? node['required'] : [];
    if (!keys.every((key) => required.includes(key))) return false;
  }
  return Object.values(node).every(isStrictCompatible);
}
