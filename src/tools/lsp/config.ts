import type { PackRoot } from '../../protocol/pack.ts';
import type { JsonSchema } from '../../protocol/types.ts';
import { readRunAs, runAsSchema, type RunAs } from '../sandbox/run-as.ts';

/** One language server as configured: what it runs and which files it serves. */
export interface ServerConfig {
  readonly name: string;
  /** A program name (looked up in `PATH`, then in vaultd's own `node_modules/.bin`) or a path. */
  readonly command: string;
  readonly args: readonly string[];
  /** The server's whole environment besides `PATH` (nothing else of vaultd's is inherited). */
  readonly env: Readonly<Record<string, string>>;
  /** File extensions it serves, lower case with the dot (`.ts`). */
  readonly extensions: readonly string[];
  /** Files whose folder is a workspace root (the nearest one inside the roots wins). */
  readonly rootMarkers: readonly string[];
  /** `initializationOptions` of the `initialize` request. */
  readonly initializationOptions: Readonly<Record<string, unknown>>;
  /** What `workspace/configuration` answers (by section, dotted keys looked up). */
  readonly settings: Readonly<Record<string, unknown>>;
  /** Run it in a bubblewrap sandbox: the system read-only, no network, a private /tmp. */
  readonly sandbox: boolean;
  /**
   * More folders a sandboxed server is shown, read-only, besides the system folders, its own
   * installation and the roots (a virtual environment its program does not live in, say).
   */
  readonly sandboxPaths: readonly string[];
}

/** The `tools.lsp` section, read once into a frozen object. */
export interface LspConfig {
  readonly servers: readonly ServerConfig[];
  /** Extra read-only roots besides the vault. */
  readonly roots: readonly PackRoot[];
  readonly startTimeoutMs: number;
  readonly requestTimeoutMs: number;
  /** Longest wait for a file's diagnostics after it was opened or changed. */
  readonly diagnosticsTimeoutMs: number;
  /** Quiet time after a publish before a file's diagnostics count as complete. */
  readonly diagnosticsSettleMs: number;
  readonly idleShutdownMs: number;
  /** Files a directory's diagnostics look at, at most. */
  readonly maxFiles: number;
  /** Language servers running at once, at most (the least recently used one stops first). */
  readonly maxServers: number;
  /** Largest message accepted from a server. */
  readonly maxMessageBytes: number;
  /** The user sandboxed servers run as when vaultd runs as root. */
  readonly runAs: RunAs;
}

/** The servers vaultd knows without config: TypeScript and JavaScript. */
export const DEFAULT_SERVERS: Readonly<Record<string, Record<string, unknown>>> = {
  typescript: {
    command: 'typescript-language-server',
    args: ['--stdio'],
    extensions: ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'],
    root_markers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
    sandbox: true,
  },
};

const serverSchema: JsonSchema = {
  type: 'object',
  properties: {
    command: { type: 'string', minLength: 1 },
    args: { type: 'array', items: { type: 'string' } },
    env: { type: 'object', additionalProperties: { type: 'string' } },
    extensions: {
      type: 'array',
      items: { type: 'string', pattern: '^\\.[A-Za-z0-9_+-]{1,20}$' },
      minItems: 1,
    },
    root_markers: { type: 'array', items: { type: 'string', pattern: '^[^/\\\\]+$' } },
    initialization_options: { type: 'object' },
    settings: { type: 'object' },
    sandbox: { type: 'boolean' },
    sandbox_paths: { type: 'array', items: { type: 'string', pattern: '^/' } },
    enabled: { type: 'boolean' },
  },
  additionalProperties: false,
};

/** JSON Schema of `tools.lsp`. */
export const lspConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    servers: {
      type: 'object',
      propertyNames: { pattern: '^[a-z][a-z0-9_-]*$' },
      additionalProperties: serverSchema,
      default: {},
    },
    roots: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', pattern: '^[a-z][a-z0-9_-]*$' },
          path: { type: 'string', pattern: '^/' },
        },
        required: ['name', 'path'],
        additionalProperties: false,
      },
      default: [],
    },
    start_timeout_ms: { type: 'integer', minimum: 100, default: 20_000 },
    request_timeout_ms: { type: 'integer', minimum: 100, default: 30_000 },
    diagnostics_timeout_ms: { type: 'integer', minimum: 100, default: 30_000 },
    diagnostics_settle_ms: { type: 'integer', minimum: 0, default: 300 },
    idle_shutdown_ms: { type: 'integer', minimum: 100, default: 600_000 },
    max_files: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
    max_servers: { type: 'integer', minimum: 1, maximum: 64, default: 4 },
    max_message_bytes: { type: 'integer', minimum: 65_536, default: 16 * 1024 * 1024 },
    run_as: runAsSchema,
  },
  additionalProperties: false,
};

/**
 * Read the `tools.lsp` section: the configured servers merged over the built-in ones by name
 * (a key the config gives wins; `enabled: false` drops a server), defaults for the rest.
 * @param section the pack's section, validated against {@link lspConfigSchema}.
 * @throws Error when two servers claim one file extension, or a server has no command.
 */
export function readLspConfig(section: Readonly<Record<string, unknown>>): LspConfig {
  const configured = (section['servers'] ?? {}) as Record<string, Record<string, unknown>>;
  const names = [...new Set([...Object.keys(DEFAULT_SERVERS), ...Object.keys(configured)])];
  const servers: ServerConfig[] = [];
  const owners = new Map<string, string>();
  for (const name of names) {
    const raw = { ...DEFAULT_SERVERS[name], ...configured[name] };
    if (raw['enabled'] === false) continue;
    if (typeof raw['command'] !== 'string') {
      throw new Error(`tools.lsp.servers.${name}: command is missing`);
    }
    if (!Array.isArray(raw['extensions'])) {
      throw new Error(`tools.lsp.servers.${name}: extensions is missing (e.g. [.py])`);
    }
    const extensions = (raw['extensions'] as string[]).map((e) => e.toLowerCase());
    for (const extension of extensions) {
      const other = owners.get(extension);
      if (other !== undefined) {
        throw new Error(
          `tools.lsp.servers: ${extension} files are claimed by both ${other} and ${name}; disable one (enabled: false) or drop the extension from one`,
        );
      }
      owners.set(extension, name);
    }
    servers.push(
      Object.freeze({
        name,
        command: raw['command'],
        args: Object.freeze(((raw['args'] as string[] | undefined) ?? []).map(String)),
        env: Object.freeze({ ...((raw['env'] as Record<string, string> | undefined) ?? {}) }),
        extensions: Object.freeze(extensions),
        rootMarkers: Object.freeze([...((raw['root_markers'] as string[] | undefined) ?? [])]),
        initializationOptions: Object.freeze({
          ...((raw['initialization_options'] as Record<string, unknown> | undefined) ?? {}),
        }),
        settings: Object.freeze({
          ...((raw['settings'] as Record<string, unknown> | undefined) ?? {}),
        }),
        sandbox: raw['sandbox'] === true,
        sandboxPaths: Object.freeze(
          ((raw['sandbox_paths'] as string[] | undefined) ?? []).map(String),
        ),
      }),
    );
  }
  const num = (key: string, fallback: number): number =>
    typeof section[key] === 'number' ? section[key] : fallback;
  const roots = ((section['roots'] ?? []) as { name: string; path: string }[]).map((r) =>
    Object.freeze({ name: r.name, path: r.path, writable: false }),
  );
  return Object.freeze({
    servers: Object.freeze(servers),
    roots: Object.freeze(roots),
    startTimeoutMs: num('start_timeout_ms', 20_000),
    requestTimeoutMs: num('request_timeout_ms', 30_000),
    diagnosticsTimeoutMs: num('diagnostics_timeout_ms', 30_000),
    diagnosticsSettleMs: num('diagnostics_settle_ms', 300),
    idleShutdownMs: num('idle_shutdown_ms', 600_000),
    maxFiles: num('max_files', 50),
    maxServers: num('max_servers', 4),
    maxMessageBytes: num('max_message_bytes', 16 * 1024 * 1024),
    runAs: readRunAs(section['run_as']),
  });
}

/**
 * The server for a file, by its extension.
 * @param config the pack's config.
 * @param path the file's path.
 */
export function serverFor(config: LspConfig, path: string): ServerConfig | undefined {
  const dot = path.lastIndexOf('.');
  const slash = path.lastIndexOf('/');
  if (dot <= slash + 1) return undefined;
  const extension = path.slice(dot).toLowerCase();
  return config.servers.find((s) => s.extensions.includes(extension));
}

const LANGUAGE_IDS: Readonly<Record<string, string>> = {
  '.ts': 'typescript',
  '.mts': 'typescript',
  '.cts': 'typescript',
  '.tsx': 'typescriptreact',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.jsx': 'javascriptreact',
  '.py': 'python',
  '.pyi': 'python',
  '.sh': 'shellscript',
  '.bash': 'shellscript',
  '.rs': 'rust',
  '.go': 'go',
  '.md': 'markdown',
};

/**
 * The LSP language identifier of a file (`typescript`, `python`…), by its extension.
 * @param path the file's path.
 */
export function languageIdOf(path: string): string {
  const dot = path.lastIndexOf('.');
  const extension = dot === -1 ? '' : path.slice(dot).toLowerCase();
  return LANGUAGE_IDS[extension] ?? extension.slice(1);
}
