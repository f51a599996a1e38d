import type { JsonSchema, SafetyLevel } from '../../protocol/types.ts';
import { runAsSchema } from '../sandbox/run-as.ts';

/** One command tool as configured under `tools.commands.<name>`. */
export interface CommandConfig {
  readonly name: string;
  readonly description: string;
  /** The program and its arguments; `{param}` in an element is replaced by that parameter. */
  readonly argv: readonly string[];
  /** JSON Schemas of the parameters by name. */
  readonly parameters: Readonly<Record<string, JsonSchema>>;
  readonly required: readonly string[];
  readonly safety: SafetyLevel;
  /** Working directory, inside the vault (relative to it) or a configured root. */
  readonly cwd: string;
  readonly timeoutMs: number | undefined;
  /** Environment variables passed to the program, besides PATH. */
  readonly env: Readonly<Record<string, string>>;
  /** Run in a bubblewrap sandbox (as `tools.commands.run_as` when vaultd runs as root). */
  readonly sandbox: boolean;
  /**
   * Parameters that name a file or folder, and what the program does with it: rules and grants
   * see their canonical path, and the program gets the absolute real path, checked for that
   * access (`read` or `write`) like a filesystem tool's.
   */
  readonly paths: Readonly<Record<string, 'read' | 'write'>>;
}

const commandSchema: JsonSchema = {
  type: 'object',
  properties: {
    description: { type: 'string', minLength: 1 },
    argv: { type: 'array', items: { type: 'string' }, minItems: 1 },
    parameters: { type: 'object', additionalProperties: { type: 'object' }, default: {} },
    required: { type: 'array', items: { type: 'string' }, default: [] },
    safety: { enum: ['safe', 'cautious', 'dangerous'], default: 'dangerous' },
    cwd: { type: 'string', default: '.' },
    timeout_ms: { type: 'integer', minimum: 100 },
    env: { type: 'object', additionalProperties: { type: 'string' }, default: {} },
    sandbox: { type: 'boolean', default: false },
    paths: {
      type: 'object',
      additionalProperties: { enum: ['read', 'write'] },
      default: {},
    },
  },
  required: ['description', 'argv'],
  additionalProperties: false,
};

/**
 * JSON Schema of `tools.commands`: one command per key (its tool's name), besides `run_as`, the
 * user sandboxed commands run as when vaultd runs as root (as `tools.shell.run_as`).
 */
export const commandsConfigSchema: JsonSchema = {
  type: 'object',
  propertyNames: { pattern: '^[a-z][a-z0-9_]*$' },
  properties: { enabled: { type: 'boolean' }, limits: { type: 'object' }, run_as: runAsSchema },
  additionalProperties: commandSchema,
};

/** The section's own keys (`enabled`, `limits`, `run_as`): every other key is a command. */
const SECTION_KEYS = commandsConfigSchema['properties'] as Record<string, unknown>;

/**
 * The commands of the `tools.commands` section (validated by the schema first).
 * @param section the pack's config section.
 */
export function readCommands(section: Readonly<Record<string, unknown>>): CommandConfig[] {
  const out: CommandConfig[] = [];
  for (const [name, raw] of Object.entries(section)) {
    if (Object.hasOwn(SECTION_KEYS, name)) continue;
    const c = raw as Record<string, unknown>;
    out.push({
      name,
      description: String(c['description']),
      argv: (c['argv'] as unknown[]).map(String),
      parameters: (c['parameters'] ?? {}) as Record<string, JsonSchema>,
      required: ((c['required'] ?? []) as unknown[]).map(String),
      safety: (c['safety'] as SafetyLevel | undefined) ?? 'dangerous',
      cwd: typeof c['cwd'] === 'string' ? c['cwd'] : '.',
      timeoutMs: typeof c['timeout_ms'] === 'number' ? c['timeout_ms'] : undefined,
      env: (c['env'] ?? {}) as Record<string, string>,
      sandbox: c['sandbox'] === true,
      paths: (c['paths'] ?? {}) as Record<string, 'read' | 'write'>,
    });
  }
  return out;
}
