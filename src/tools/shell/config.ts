import type { PackRoot } from '../../protocol/pack.ts';
import type { JsonSchema } from '../../protocol/types.ts';
import { readRunAs, runAsSchema, type RunAs } from '../sandbox/run-as.ts';

/** Resource limits set with `prlimit` inside the sandbox (soft = hard). */
export interface ShellResources {
  /** CPU seconds per process (SIGXCPU, then SIGKILL). */
  readonly cpuSeconds: number;
  /** Address space per process, in MiB. */
  readonly memoryMb: number;
  /** Largest file a process may write, in MiB (also caps a background job's log). */
  readonly fileSizeMb: number;
  /** Processes of the sandbox's user (a fork bomb stops here). */
  readonly processes: number;
  /** Open files per process. */
  readonly openFiles: number;
  /** Size of the private /tmp, in MiB. */
  readonly tmpMb: number;
}

/** The `tools.shell` section, normalised once. */
export interface ShellSettings {
  /** `bwrap`: every command in a bubblewrap sandbox; `none`: no sandbox (operator's choice). */
  readonly sandbox: 'bwrap' | 'none';
  readonly bwrapPath: string;
  /** Let commands reach the network (a shared network namespace). */
  readonly network: boolean;
  readonly defaultTimeoutS: number;
  readonly maxTimeoutS: number;
  /** Names of variables a call may set through `env`. */
  readonly envAllow: readonly string[];
  /** `PATH` inside the sandbox. */
  readonly path: string;
  /** Bytes kept of stdout and of stderr each for `shell_exec`. */
  readonly outputBytes: number;
  /** Background jobs running at once. */
  readonly maxJobs: number;
  /** Finished job records kept; older ones are deleted with their logs. */
  readonly keepJobs: number;
  /** The user commands run as when vaultd runs as root. */
  readonly runAs: RunAs;
  readonly resources: ShellResources;
  /** Extra folders a command may run in, besides the vault. */
  readonly roots: readonly PackRoot[];
}

const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]*$';

/** Variables a call may set unless the config says otherwise: harmless locale and CI switches. */
export const DEFAULT_ENV_ALLOW: readonly string[] = [
  'LANG',
  'LC_ALL',
  'TZ',
  'CI',
  'NO_COLOR',
  'FORCE_COLOR',
  'TERM',
];

/** JSON Schema of `tools.shell`. */
export const shellConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    sandbox: { enum: ['bwrap', 'none'], default: 'bwrap' },
    bwrap_path: { type: 'string', pattern: '^/', default: '/usr/bin/bwrap' },
    network: { type: 'boolean', default: false },
    // No schema default: without one it is 60 s or max_timeout_s, whichever is less.
    default_timeout_s: { type: 'integer', minimum: 1, maximum: 86_400 },
    max_timeout_s: { type: 'integer', minimum: 1, maximum: 86_400, default: 600 },
    env_allow: {
      type: 'array',
      items: { type: 'string', pattern: ENV_NAME },
      uniqueItems: true,
      default: [...DEFAULT_ENV_ALLOW],
    },
    path: {
      type: 'string',
      pattern: '^[^\\u0000]*$',
      default: '/usr/local/bin:/usr/bin:/bin',
    },
    output_bytes: { type: 'integer', minimum: 1024, maximum: 16_777_216, default: 65_536 },
    max_jobs: { type: 'integer', minimum: 0, maximum: 64, default: 4 },
    keep_jobs: { type: 'integer', minimum: 0, maximum: 10_000, default: 50 },
    run_as: runAsSchema,
    resources: {
      type: 'object',
      properties: {
        cpu_s: { type: 'integer', minimum: 1, default: 60 },
        memory_mb: { type: 'integer', minimum: 16, default: 1024 },
        file_size_mb: { type: 'integer', minimum: 1, default: 64 },
        processes: { type: 'integer', minimum: 4, maximum: 65_536, default: 128 },
        open_files: { type: 'integer', minimum: 16, maximum: 65_536, default: 256 },
        tmp_mb: { type: 'integer', minimum: 1, default: 256 },
      },
      additionalProperties: false,
      default: {},
    },
    roots: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', pattern: '^[a-z][a-z0-9_-]*$' },
          path: { type: 'string', pattern: '^/' },
          writable: { type: 'boolean', default: true },
        },
        required: ['name', 'path'],
        additionalProperties: false,
      },
      default: [],
    },
  },
  additionalProperties: false,
};

/**
 * Read the validated `tools.shell` section into frozen settings (defaults for anything absent).
 * @param section the pack's config section, validated against {@link shellConfigSchema}.
 * @throws Error when `default_timeout_s` is above `max_timeout_s`.
 */
export function readShellSettings(section: Readonly<Record<string, unknown>>): ShellSettings {
  const num = (value: unknown, fallback: number): number =>
    typeof value === 'number' ? value : fallback;
  const res = (section['resources'] ?? {}) as Record<string, unknown>;
  const maxTimeoutS = num(section['max_timeout_s'], 600);
  const defaultTimeoutS = num(section['default_timeout_s'], Math.min(60, maxTimeoutS));
  if (defaultTimeoutS > maxTimeoutS) {
    throw new Error(
      `tools.shell.default_timeout_s (${defaultTimeoutS}) is above tools.shell.max_timeout_s (${maxTimeoutS})`,
    );
  }
  const roots = ((section['roots'] ?? []) as Record<string, unknown>[]).map((r) =>
    Object.freeze({
      name: String(r['name']),
      path: String(r['path']),
      writable: r['writable'] !== false,
    }),
  );
  return Object.freeze({
    sandbox: section['sandbox'] === 'none' ? 'none' : 'bwrap',
    bwrapPath: typeof section['bwrap_path'] === 'string' ? section['bwrap_path'] : '/usr/bin/bwrap',
    network: section['network'] === true,
    defaultTimeoutS,
    maxTimeoutS,
    envAllow: Object.freeze(
      Array.isArray(section['env_allow'])
        ? section['env_allow'].map(String)
        : [...DEFAULT_ENV_ALLOW],
    ),
    path: typeof section['path'] === 'string' ? section['path'] : '/usr/local/bin:/usr/bin:/bin',
    outputBytes: num(section['output_bytes'], 65_536),
    maxJobs: num(section['max_jobs'], 4),
    keepJobs: num(section['keep_jobs'], 50),
    runAs: readRunAs(section['run_as']),
    resources: Object.freeze({
      cpuSeconds: num(res['cpu_s'], 60),
      memoryMb: num(res['memory_mb'], 1024),
      fileSizeMb: num(res['file_size_mb'], 64),
      processes: num(res['processes'], 128),
      openFiles: num(res['open_files'], 256),
      tmpMb: num(res['tmp_mb'], 256),
    }),
    roots: Object.freeze(roots),
  });
}
