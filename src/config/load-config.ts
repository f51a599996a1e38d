import { validate as isValidCron } from 'node-cron';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { compilePolicy, parsePolicyRule, PolicyRuleError } from '../approval/policy.ts';
import type { JsonSchema } from '../protocol/types.ts';
import { checkFolders } from './check-folders.ts';
import { ConfigError, quoteValue } from './config-error.ts';
import { deepFreeze } from './deep-freeze.ts';
import { CONFIG_DEFAULTS } from './defaults.ts';
import { parseDuration } from './duration.ts';
import { readConfigFile } from './read-config-file.ts';
import { CONFIG_SCHEMA } from './schema.ts';
import { substituteEnv } from './substitute-env.ts';
import type { Config } from './types.ts';
import { validateSection } from './validate-schema.ts';

/** Where the config comes from. */
export interface LoadConfigOptions {
  /** YAML config file; without it every key takes its default. */
  file?: string;
  /** Vault directory from the command line; wins over the file's `vault`; relative to the cwd. */
  vault?: string;
  /** Environment for `${NAME}` substitution; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Schema of each tool's `tools.<name>` section, by tool name; sections without one are not checked. */
  toolSchemas?: Record<string, JsonSchema>;
  /**
   * Tools whose section is checked (and given its defaults) only when the config has one: packs
   * that are off unless configured. Compiling every pack's schema cost a fifth of the start-up.
   */
  optionalTools?: ReadonlySet<string>;
}

type Raw = Record<string, unknown>;

/**
 * Load, substitute, validate and default the configuration (SPEC section 9).
 * @param options file, vault override, environment and tool schemas; all optional.
 * `VAULTD_LOG_LEVEL` in the environment, when set, overrides `log.level`.
 * @returns the deep-frozen config; `vault` and `plugins` are absolute paths, resolved against the
 *   config file's folder (the cwd without a file; the `vault` option against the cwd).
 * @throws ConfigError listing every problem, each naming its key (or environment variable) and
 *   quoting the bad value.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const file = options.file === undefined ? undefined : resolve(options.file);
  const raw = file === undefined ? {} : readConfigFile(file);
  const substituted = substituteEnv(raw, options.env ?? process.env);
  const data = substituted.data as Raw;
  const problems = [...substituted.problems];

  const schemaProblems = validateSection(CONFIG_SCHEMA, data, [], substituted);
  problems.push(...schemaProblems);

  // The checks below read values the schema may have rejected, so each guards its own types:
  // one run reports every problem.
  const config = applyDefaults(data);
  let logLevel = config.log.level;
  const environmentProblems: string[] = [];
  const levelFromEnv = (options.env ?? process.env)['VAULTD_LOG_LEVEL'];
  if (levelFromEnv !== undefined && levelFromEnv !== '') {
    if (LOG_LEVELS.includes(levelFromEnv)) logLevel = levelFromEnv as Config['log']['level'];
    else
      environmentProblems.push(
        `environment variable VAULTD_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${quoteValue(levelFromEnv)}); set a valid level, or unset it to use the config's log.level`,
      );
  }
  problems.push(...checkOrigins(config.http.allowed_origins));
  const tokenEnv = config.http.api_token_env;
  const token = typeof tokenEnv === 'string' ? (options.env ?? process.env)[tokenEnv] : undefined;
  if (config.http.port !== null && token !== undefined && /\s/.test(token)) {
    // The header is read as `Bearer <one word>`: a token with a space or a line break in it
    // would pass the length check and never match (the value itself is a secret: not quoted).
    environmentProblems.push(
      `environment variable ${tokenEnv} (http.api_token_env) holds a token with whitespace in it, which no Authorization header can carry, so every API request would be refused; remove the spaces and line breaks (e.g. a token from \`openssl rand -hex 32\`)`,
    );
  }
  problems.push(...checkCron('reconcile_cron', config.reconcile_cron));
  problems.push(...checkCron('approval.check_cron', config.approval.check_cron));
  const expireMs = checkDuration('approval.expire_after', config.approval.expire_after, problems);
  const replayMs = checkDuration('ledger.replay_window', config.ledger.replay_window, problems);
  const retentionMs = checkDuration('ledger.retention', config.ledger.retention, problems);
  problems.push(...checkFolders(config.folders));
  problems.push(...checkPolicy(config.policy));
  const tools = isMapping(config.tools) ? config.tools : {};
  for (const [name, schema] of Object.entries(options.toolSchemas ?? {})) {
    if (tools[name] === undefined && options.optionalTools?.has(name) === true) continue;
    const section = tools[name] ?? {};
    if (!isMapping(section)) continue;
    problems.push(...validateSection(schema, section, ['tools', name], substituted));
    if (tools[name] === undefined && Object.keys(section).length > 0) {
      (tools as Record<string, Raw>)[name] = section;
    }
  }

  alignOutbox(data, config, problems);

  const baseDir = file === undefined ? process.cwd() : dirname(file);
  let vault: string | undefined;
  if (options.vault !== undefined) vault = resolve(options.vault);
  else if (typeof data['vault'] === 'string') vault = configPath(baseDir, data['vault']);
  else problems.push("no vault given: pass --vault DIR or set 'vault' in the config file");

  if (problems.length > 0 || environmentProblems.length > 0 || vault === undefined)
    throw new ConfigError(problems, file, environmentProblems);
  const loaded: Config = deepFreeze({
    ...config,
    vault,
    log: { ...config.log, level: logLevel },
    plugins: config.plugins.map((plugin) => configPath(baseDir, plugin)),
    approval: { ...config.approval, expire_after_ms: expireMs },
    ledger: { ...config.ledger, replay_window_ms: replayMs, retention_ms: retentionMs },
  });
  ENV_VALUES.set(loaded, [...substituted.envValues]);
  if (file !== undefined) CONFIG_FILES.set(loaded, file);
  return loaded;
}

// pino's levels; the schema's `log.level` enum is the same list.
const LOG_LEVELS: readonly string[] = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
];

const ENV_VALUES = new WeakMap<Config, readonly string[]>();

/**
 * The values `${ENV}` substitution put into a loaded config (secrets, as far as vaultd knows).
 * @param config a config returned by {@link loadConfig}.
 */
export function envValuesOf(config: Config): readonly string[] {
  return ENV_VALUES.get(config) ?? [];
}

const CONFIG_FILES = new WeakMap<Config, string>();

/**
 * The file a config was loaded from (absolute), for keeping it out of the tools' reach.
 * @param config a config returned by {@link loadConfig}.
 * @returns undefined for a config made without a file.
 */
export function configFileOf(config: Config): string | undefined {
  return CONFIG_FILES.get(config);
}

/**
 * A loaded config with some top-level keys replaced, still tied to the file and the `${ENV}`
 * values it was loaded with ({@link configFileOf}, {@link envValuesOf}): a spread copy loses them,
 * and with them the tools' refusal to read or write that file.
 * @param config a config returned by {@link loadConfig}.
 * @param changes the top-level keys to replace.
 */
export function changeConfig(config: Config, changes: Partial<Config>): Config {
  const changed: Config = deepFreeze({ ...config, ...changes });
  const file = CONFIG_FILES.get(config);
  if (file !== undefined) CONFIG_FILES.set(changed, file);
  const env = ENV_VALUES.get(config);
  if (env !== undefined) ENV_VALUES.set(changed, env);
  return changed;
}

/**
 * `folders.outbox` (the folder vaultd creates and keeps clear of temp files) and the notify pack's
 * `outbox.folder` (where `send_notification` files a message) name one folder: either one set
 * fills in the other, and both set to different folders is a problem.
 */
function alignOutbox(
  data: Raw,
  config: { folders: Config['folders']; tools: Config['tools'] },
  problems: string[],
): void {
  const folders = data['folders'];
  const folderSet = isMapping(folders) && typeof folders['outbox'] === 'string';
  const key = ['notify', 'send_notification'].find((name) => config.tools[name] !== undefined);
  const section = key === undefined ? undefined : config.tools[key];
  if (section !== undefined && !isMapping(section)) return; // reported by the schema
  const outbox = isMapping(section?.['outbox']) ? (section['outbox'] as Raw) : undefined;
  const toolFolder = outbox?.['folder'];
  if (typeof toolFolder === 'string') {
    if (!folderSet) config.folders = { ...config.folders, outbox: toolFolder };
    else if (toolFolder !== config.folders.outbox)
      problems.push(
        `config keys 'folders.outbox' (${quoteValue(config.folders.outbox)}) and 'tools.${key ?? 'notify'}.outbox.folder' (${quoteValue(toolFolder)}) name different folders; they are the same folder: set one of them`,
      );
  } else if (folderSet) {
    (config.tools as Record<string, Raw>)[key ?? 'notify'] = {
      ...section,
      outbox: { ...outbox, folder: config.folders.outbox },
    };
  }
}

function isMapping(value: unknown): value is Raw {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function checkDuration(key: string, text: unknown, problems: string[]): number {
  if (typeof text !== 'string') return 0;
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch {
    // A text that does not match the pattern at all is already reported by the schema.
    return 0;
  }
  if (ms > 0) return ms;
  problems.push(`config key '${key}' must be a duration above zero (got ${quoteValue(text)})`);
  return 0;
}

/**
 * `http.allowed_origins` entries that no browser sends: an `Origin` header is `scheme://host` with
 * a port only when it is not the scheme's default, and no path, so `https://dash.example/` (or
 * with a path, or `:443`) could never match, and the page would be refused with no hint why.
 * @param origins the configured list (the schema checks its type and the scheme).
 */
function checkOrigins(origins: unknown): string[] {
  if (!Array.isArray(origins)) return [];
  const problems: string[] = [];
  origins.forEach((origin: unknown, i) => {
    if (typeof origin !== 'string' || !/^https?:\/\//.test(origin)) return;
    const key = `config key 'http.allowed_origins[${i}]'`;
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (url === undefined || url.host === '') {
      problems.push(
        `${key} is not an origin (got ${quoteValue(origin)}); write scheme://host[:port], e.g. 'https://dash.example'`,
      );
    } else if (url.origin !== origin.toLowerCase()) {
      problems.push(
        `${key} must be an origin as browsers send it, scheme://host[:port] with no path, trailing slash or default port (got ${quoteValue(origin)}); write ${quoteValue(url.origin)}`,
      );
    }
  });
  return problems;
}

/**
 * Compile the policy rules now, so that a malformed one stops the start (or a reload) with the
 * rule quoted, instead of surfacing later; every bad rule is reported.
 */
function checkPolicy(policy: unknown): string[] {
  if (!isMapping(policy)) return [];
  const problems: string[] = [];
  let malformed = false;
  for (const list of ['allow', 'ask', 'deny'] as const) {
    const rules = policy[list];
    // Not a list, or not strings: the schema reported it.
    if (rules === undefined) continue;
    if (!Array.isArray(rules)) return problems;
    rules.forEach((rule: unknown, index) => {
      if (typeof rule !== 'string' || rule === '') {
        malformed = true;
        return;
      }
      const parsed = parsePolicyRule(rule);
      if (typeof parsed === 'string')
        problems.push(new PolicyRuleError(list, index, rule, parsed).message);
    });
  }
  if (problems.length > 0 || malformed) return problems;
  try {
    compilePolicy(policy);
  } catch (error) {
    return [(error as Error).message];
  }
  return [];
}

function checkCron(key: string, expression: unknown): string[] {
  return typeof expression !== 'string' || isValidCron(expression)
    ? []
    : [
        `config key '${key}' is not a valid cron expression (got ${quoteValue(expression)}); five fields, or six with seconds first, e.g. '*/30 * * * * *'`,
      ];
}

/** Merge the raw data over the defaults, one level deep for the sections; non-mappings are skipped (the schema reported them). */
function applyDefaults(data: Raw): Omit<Config, 'vault'> {
  const d = CONFIG_DEFAULTS;
  const section = <T extends object>(key: string, defaults: T): T => ({
    ...defaults,
    ...(isMapping(data[key]) ? (data[key] as Partial<T>) : {}),
  });
  const pick = <K extends keyof typeof d>(key: K): (typeof d)[K] =>
    (data[key] as (typeof d)[K] | undefined) ?? d[key];
  return {
    concurrency: pick('concurrency'),
    timeout_ms: pick('timeout_ms'),
    settle_ms: pick('settle_ms'),
    max_note_bytes: pick('max_note_bytes'),
    max_calls_per_note: pick('max_calls_per_note'),
    reconcile_cron: pick('reconcile_cron'),
    cache_ttl_ms: pick('cache_ttl_ms'),
    retry: section('retry', d.retry),
    folders: section('folders', d.folders),
    log: section('log', d.log),
    http: section('http', d.http),
    shutdown: section('shutdown', d.shutdown),
    approval: section('approval', d.approval),
    ledger: section('ledger', d.ledger),
    policy: section('policy', d.policy),
    dashboard_interval_ms: pick('dashboard_interval_ms'),
    parse_timeout_ms: pick('parse_timeout_ms'),
    plugins: pick('plugins'),
    tools: { ...((data['tools'] as Raw | undefined) ?? {}) } as Config['tools'],
  };
}

/**
 * A path written in the config file: `~/…` is in the home folder of the user running vaultd (as a
 * shell would read it: a user unit's `vault: ~/Vault` used to name `~/.config/vaultd/~/Vault`),
 * anything else relative to the config file's folder. `~user/…` is not expanded.
 * @param baseDir the config file's folder.
 * @param path the value as written.
 */
function configPath(baseDir: string, path: string): string {
  if (path === '~' || path.startsWith('~/')) return join(homedir(), path.slice(1));
  return resolve(baseDir, path);
}
