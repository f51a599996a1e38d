import type { JsonSchema } from '../../protocol/types.ts';
import type { PackRoot } from '../../protocol/pack.ts';

/** The `tools.filesystem` section, defaults applied. */
export interface FilesystemConfig {
  /** Folders besides the vault, each read-only unless `writable: true`. */
  readonly roots: readonly PackRoot[];
  /** Folders (in any writable root) where writes and edits are cautious instead of dangerous. */
  readonly scratch: readonly string[];
  /** Paths (relative to the vault, or absolute) no tool of the pack writes, besides vaultd's own. */
  readonly protectedPaths: readonly string[];
  /** Bytes `read_file` returns at most. */
  readonly maxReadBytes: number;
  /** Bytes `write_file` writes at most. */
  readonly maxWriteBytes: number;
  /** Bytes a file may have for `edit_file` and for content search. */
  readonly maxEditBytes: number;
  /** Entries `list_directory` returns at most (its `max_entries` may not go higher). */
  readonly maxEntries: number;
  /** Folder levels below the start that recursive listing and search go down. */
  readonly maxDepth: number;
  /** Results `search_files` returns at most. */
  readonly maxResults: number;
  /** Files and folders a search or a recursive delete, move or listing looks at, at most. */
  readonly maxVisited: number;
  /** How long a search may take before it returns what it found. */
  readonly searchTimeoutMs: number;
}

/** Written by no tool unless the config says otherwise: vaultd's config file, when it is in the vault. */
export const DEFAULT_PROTECTED = Object.freeze(['vaultd.yaml', 'vaultd.yml']);

/** The defaults of `tools.filesystem`. */
export const FILESYSTEM_DEFAULTS = Object.freeze({
  max_read_bytes: 256 * 1024,
  max_write_bytes: 5 * 1024 * 1024,
  max_edit_bytes: 5 * 1024 * 1024,
  max_entries: 1000,
  max_depth: 10,
  max_results: 200,
  max_visited: 20_000,
  search_timeout_ms: 10_000,
});

/** JSON Schema of `tools.filesystem` (without `enabled` and `limits`). */
export const filesystemConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    roots: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        properties: {
          // `vault` is the vault's own name.
          name: { type: 'string', pattern: '^(?!vault$)[A-Za-z0-9][A-Za-z0-9_.-]*$' },
          path: { type: 'string', minLength: 1 },
          writable: { type: 'boolean', default: false },
        },
        required: ['name', 'path'],
        additionalProperties: false,
      },
    },
    scratch: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    protected: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: [...DEFAULT_PROTECTED],
    },
    max_read_bytes: { type: 'integer', minimum: 1024, default: FILESYSTEM_DEFAULTS.max_read_bytes },
    max_write_bytes: {
      type: 'integer',
      minimum: 1024,
      default: FILESYSTEM_DEFAULTS.max_write_bytes,
    },
    max_edit_bytes: { type: 'integer', minimum: 1024, default: FILESYSTEM_DEFAULTS.max_edit_bytes },
    max_entries: { type: 'integer', minimum: 1, default: FILESYSTEM_DEFAULTS.max_entries },
    max_depth: { type: 'integer', minimum: 0, maximum: 64, default: FILESYSTEM_DEFAULTS.max_depth },
    max_results: { type: 'integer', minimum: 1, default: FILESYSTEM_DEFAULTS.max_results },
    max_visited: { type: 'integer', minimum: 1, default: FILESYSTEM_DEFAULTS.max_visited },
    search_timeout_ms: {
      type: 'integer',
      minimum: 100,
      default: FILESYSTEM_DEFAULTS.search_timeout_ms,
    },
  },
  additionalProperties: false,
};

/**
 * The section as typed values; missing keys take their defaults (the daemon applies them already,
 * a handler called directly in a test may not have them).
 * @param section `tools.filesystem`.
 */
export function readFilesystemConfig(section: Readonly<Record<string, unknown>>): FilesystemConfig {
  const num = (key: keyof typeof FILESYSTEM_DEFAULTS): number => {
    const value = section[key];
    return typeof value === 'number' ? value : FILESYSTEM_DEFAULTS[key];
  };
  const roots = Array.isArray(section['roots']) ? (section['roots'] as unknown[]) : [];
  const scratch = Array.isArray(section['scratch']) ? (section['scratch'] as unknown[]) : [];
  return {
    roots: roots.map((raw) => {
      const r = raw as Record<string, unknown>;
      return { name: String(r['name']), path: String(r['path']), writable: r['writable'] === true };
    }),
    scratch: scratch.map(String),
    protectedPaths: Array.isArray(section['protected'])
      ? (section['protected'] as unknown[]).map(String)
      : DEFAULT_PROTECTED,
    maxReadBytes: num('max_read_bytes'),
    maxWriteBytes: num('max_write_bytes'),
    maxEditBytes: num('max_edit_bytes'),
    maxEntries: num('max_entries'),
    maxDepth: num('max_depth'),
    maxResults: num('max_results'),
    maxVisited: num('max_visited'),
    searchTimeoutMs: num('search_timeout_ms'),
  };
}
