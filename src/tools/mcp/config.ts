import type { JsonSchema, SafetyLevel } from '../../protocol/types.ts';

/** One MCP server as configured: a program speaking stdio, or a Streamable HTTP endpoint. */
export interface McpServerConfig {
  readonly name: string;
  readonly command?: string;
  readonly args: readonly string[];
  /** The child's whole environment besides `PATH` (nothing else is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly url?: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Prefix of the tools' names in vaultd: `<prefix>_<tool>`; default the server's name. */
  readonly prefix: string;
  /** Level of the server's tools unless `tools` says otherwise; default dangerous. */
  readonly safety: SafetyLevel;
  /**
   * Levels by tool-name glob, matched against the server's own names and the names as they end
   * vaultd's (`Delete-File` as `delete_file`), e.g. `read_*: safe`.
   */
  readonly tools: Readonly<Record<string, SafetyLevel>>;
  /** How long connecting may take. */
  readonly connectTimeoutMs: number;
}

const SAFETY = { enum: ['safe', 'cautious', 'dangerous'] };

const serverSchema: JsonSchema = {
  type: 'object',
  properties: {
    command: { type: 'string', minLength: 1 },
    args: { type: 'array', items: { type: 'string' }, default: [] },
    env: { type: 'object', additionalProperties: { type: 'string' }, default: {} },
    cwd: { type: 'string', minLength: 1 },
    url: { type: 'string', pattern: '^https?://' },
    headers: { type: 'object', additionalProperties: { type: 'string' }, default: {} },
    prefix: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' },
    safety: { ...SAFETY, default: 'dangerous' },
    tools: { type: 'object', additionalProperties: SAFETY, default: {} },
    connect_timeout_ms: { type: 'integer', minimum: 100, default: 15_000 },
    enabled: { type: 'boolean', default: true },
  },
  oneOf: [{ required: ['command'] }, { required: ['url'] }],
  additionalProperties: false,
};

/** JSON Schema of `tools.mcp`. */
export const mcpConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    servers: {
      type: 'object',
      propertyNames: { pattern: '^[a-z][a-z0-9_]*$' },
      additionalProperties: serverSchema,
      default: {},
    },
  },
  additionalProperties: false,
};

/**
 * The servers of the `tools.mcp` section (validated by the schema; wrong types fall back to the
 * defaults), without the disabled ones.
 * @param section the pack's config section.
 * @throws Error naming two servers whose prefixes overlap (one is the other, or starts it followed
 *   by `_`): a tool of one could then take the name of a tool of the other, and with it the
 *   other's approvals and grants (`b_y` of server `a` and `y` of server `a_b` are both `a_b_y`).
 */
export function readServers(section: Readonly<Record<string, unknown>>): McpServerConfig[] {
  const servers = (section['servers'] ?? {}) as Record<string, Record<string, unknown>>;
  const out: McpServerConfig[] = [];
  for (const [name, raw] of Object.entries(servers)) {
    if (raw['enabled'] === false) continue;
    const strings = (value: unknown): Record<string, string> =>
      value !== null && typeof value === 'object' ? (value as Record<string, string>) : {};
    out.push({
      name,
      ...(typeof raw['command'] === 'string' ? { command: raw['command'] } : {}),
      args: Array.isArray(raw['args']) ? raw['args'].map(String) : [],
      env: strings(raw['env']),
      ...(typeof raw['cwd'] === 'string' ? { cwd: raw['cwd'] } : {}),
      ...(typeof raw['url'] === 'string' ? { url: raw['url'] } : {}),
      headers: strings(raw['headers']),
      prefix: typeof raw['prefix'] === 'string' ? raw['prefix'] : name,
      safety: (raw['safety'] as SafetyLevel | undefined) ?? 'dangerous',
      tools: strings(raw['tools']) as Record<string, SafetyLevel>,
      connectTimeoutMs:
        typeof raw['connect_timeout_ms'] === 'number' ? raw['connect_timeout_ms'] : 15_000,
    });
  }
  for (const one of out) {
    for (const other of out) {
      if (one !== other && `${other.prefix}_`.startsWith(`${one.prefix}_`)) {
        throw new Error(
          `tools.mcp.servers: the tool names of servers '${one.name}' (prefix '${one.prefix}') and '${other.name}' (prefix '${other.prefix}') overlap: ` +
            `a tool of '${one.name}' could take the name of a tool of '${other.name}', and its approvals and grants; ` +
            `give them prefixes where neither is the other or starts it followed by '_' (tools.mcp.servers.<name>.prefix)`,
        );
      }
    }
  }
  return out;
}
