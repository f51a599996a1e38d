import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/types.ts';
import type { ToolRuntime } from '../execute/types.ts';
import { checkToolSchemas, withPack } from '../protocol/define-tool.ts';
import type { PackContext, PackHandle, PackRoot, ToolPack } from '../protocol/pack.ts';
import type { ToolRegistry } from '../protocol/registry.ts';
import type { JsonSchema, RateLimit, Tool, VaultAccess } from '../protocol/types.ts';
import {
  createVaultAccess,
  resolveProtection,
  type Protection,
  type SharedAccess,
} from '../vault/access.ts';
import { protectedPathsOf } from '../vault/protected.ts';
import { BUILTIN_PACKS } from './index.ts';
import type { VaultLayout } from '../vault/layout.ts';

/** Per-tool limits every pack section may set: `tools.<pack>.limits.<tool>`. */
const LIMITS_SCHEMA: JsonSchema = {
  type: 'object',
  propertyNames: { pattern: '^[a-z][a-z0-9_]*$' },
  additionalProperties: {
    type: 'object',
    properties: {
      timeout_ms: { type: 'integer', minimum: 1 },
      max_output_bytes: { type: 'integer', minimum: 1024 },
      rate_limit: {
        type: 'object',
        properties: {
          max: { type: 'integer', minimum: 1 },
          window_ms: { type: 'integer', minimum: 1 },
        },
        required: ['max', 'window_ms'],
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  },
};

/**
 * The schema of a pack's whole config section: its own schema plus `enabled` and `limits`, which
 * every pack has.
 * @param pack the pack.
 */
export function packSectionSchema(pack: ToolPack): JsonSchema {
  const base = pack.configSchema ?? { type: 'object' };
  const properties = (base['properties'] as Record<string, JsonSchema> | undefined) ?? {};
  return {
    ...base,
    type: 'object',
    properties: { ...properties, enabled: { type: 'boolean' }, limits: LIMITS_SCHEMA },
  };
}

const sectionSchemas = new WeakMap<ToolPack, JsonSchema>();

/**
 * The names (and older keys) of the packs that are off unless their section turns them on: their
 * sections are checked only when present.
 * @param packs the packs.
 */
export function optionalPackSections(packs: readonly ToolPack[]): Set<string> {
  const names = new Set<string>();
  for (const pack of packs) {
    if (pack.enabledByDefault !== false) continue;
    names.add(pack.name);
    if (pack.legacyConfigKey !== undefined) names.add(pack.legacyConfigKey);
  }
  return names;
}

/**
 * The schemas of `tools.<key>` for config loading: each pack under its name and its older key.
 * @param packs the packs.
 */
export function packConfigSchemas(packs: readonly ToolPack[]): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  for (const pack of packs) {
    // One schema object per pack, so a second config load reuses its compiled validator.
    let schema = sectionSchemas.get(pack);
    if (schema === undefined) {
      schema = packSectionSchema(pack);
      sectionSchemas.set(pack, schema);
    }
    schemas[pack.name] = schema;
    if (pack.legacyConfigKey !== undefined) schemas[pack.legacyConfigKey] = schema;
  }
  return schemas;
}

/**
 * Check that every `tools.<key>` names a pack, that no pack is configured under both its name
 * and its older key, and that two packs do not share a name.
 * @param config the loaded config.
 * @param packs the packs (built-in and plugins).
 * @returns one sentence per problem.
 */
export function checkToolSections(config: Config, packs: readonly ToolPack[]): string[] {
  const problems: string[] = [];
  const keys = new Map<string, ToolPack>();
  for (const pack of packs) {
    if (keys.has(pack.name)) problems.push(`two packs are named '${pack.name}'`);
    keys.set(pack.name, pack);
    if (pack.legacyConfigKey !== undefined) keys.set(pack.legacyConfigKey, pack);
  }
  for (const key of Object.keys(config.tools)) {
    const pack = keys.get(key);
    if (pack === undefined) {
      const names = packs.map((p) => p.name).join(', ');
      problems.push(`config key 'tools.${key}' names no tool pack; the packs are: ${names}`);
    } else if (
      pack.legacyConfigKey !== undefined &&
      key === pack.legacyConfigKey &&
      config.tools[pack.name] !== undefined
    ) {
      problems.push(
        `config keys 'tools.${pack.name}' and 'tools.${key}' configure the same pack; keep 'tools.${pack.name}'`,
      );
    }
  }
  return problems;
}

/** A pack as `vaultd tools` lists it. */
export interface PackInfo {
  readonly name: string;
  readonly description: string;
  readonly enabled: boolean;
  /** Its tools: the running ones once started, else the ones it declares statically. */
  readonly tools: readonly Tool[];
}

/** Options of {@link PackHost}. */
export interface PackHostOptions {
  readonly packs: readonly ToolPack[];
  readonly config: Config;
  readonly layout: VaultLayout;
  readonly registry: ToolRegistry;
  readonly logger: Logger;
  /**
   * The folder the packs' own state folders are made in; default `<vault>/.vaultd/packs`. A
   * command that only looks (`vaultd check`, `vaultd tools`) gives a folder of its own: the shell
   * pack marks the jobs recorded there interrupted and kills them at start, and the git pack
   * empties its HOME, which are a running daemon's.
   */
  readonly packsStateDir?: string;
}

interface Running {
  readonly pack: ToolPack;
  readonly handle: PackHandle;
  readonly controller: AbortController;
  readonly unsubscribe: () => void;
  config: Readonly<Record<string, unknown>>;
  files: SharedAccess;
}

/**
 * Starts the enabled packs with their config sections, keeps the registry in step with their
 * tools (also when a pack's tools change while running), hands each tool its pack's config, file
 * access and limits, and stops the packs at shutdown.
 */
export class PackHost {
  readonly #options: PackHostOptions;
  readonly #running = new Map<string, Running>();
  #config: Config;
  /** What no tool may write or read, resolved at the first pack's start. */
  #protection: Promise<Protection> | undefined;

  /** @param options packs, config, vault layout, registry and logger. */
  constructor(options: PackHostOptions) {
    this.#options = options;
    this.#config = options.config;
  }

  /**
   * The config section of a pack, under its name or its older key (`{}` when absent).
   * @param pack the pack.
   * @param config the config; default the current one.
   */
  sectionOf(pack: ToolPack, config: Config = this.#config): Readonly<Record<string, unknown>> {
    return (
      config.tools[pack.name] ??
      (pack.legacyConfigKey === undefined ? undefined : config.tools[pack.legacyConfigKey]) ??
      {}
    );
  }

  /**
   * Whether a pack runs with this config: `tools.<pack>.enabled`, else the pack's default.
   * @param pack the pack.
   */
  isEnabled(pack: ToolPack): boolean {
    const enabled = this.sectionOf(pack)['enabled'];
    return typeof enabled === 'boolean' ? enabled : pack.enabledByDefault !== false;
  }

  /** Start every enabled pack and register its tools; a pack that fails to start stops start-up. */
  async start(): Promise<void> {
    this.#protection = undefined;
    for (const pack of this.#options.packs) {
      if (!this.isEnabled(pack)) continue;
      try {
        await this.#startPack(pack);
      } catch (error) {
        await this.stop();
        throw new Error(`tool pack '${pack.name}' could not start: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
  }

  /**
   * What a tool gets from its pack: the pack's config, file access and the tool's limits.
   * @param tool a registered tool.
   */
  runtime(tool: Tool): ToolRuntime | undefined {
    const running = tool.pack === undefined ? undefined : this.#running.get(tool.pack);
    if (running === undefined) return undefined;
    const limits = (
      running.config['limits'] as Record<string, Record<string, unknown>> | undefined
    )?.[tool.name];
    const legacyRate = running.config['rate_limit'];
    const rate = (limits?.['rate_limit'] ?? legacyRate) as
      { max?: unknown; window_ms?: unknown } | undefined;
    const rateLimit: RateLimit | undefined =
      rate !== undefined && typeof rate.max === 'number' && typeof rate.window_ms === 'number'
        ? { max: rate.max, windowMs: rate.window_ms }
        : undefined;
    return {
      config: running.config,
      files: running.files,
      ...(typeof limits?.['timeout_ms'] === 'number' ? { timeoutMs: limits['timeout_ms'] } : {}),
      ...(typeof limits?.['max_output_bytes'] === 'number'
        ? { maxOutputBytes: limits['max_output_bytes'] }
        : {}),
      ...(rateLimit === undefined ? {} : { rateLimit }),
    };
  }

  /** Every pack, enabled or not, with its tools. */
  describe(): PackInfo[] {
    return this.#options.packs.map((pack) => {
      const running = this.#running.get(pack.name);
      return {
        name: pack.name,
        description: pack.description,
        enabled: this.isEnabled(pack),
        tools: running === undefined ? (pack.staticTools ?? []) : running.handle.tools(),
      };
    });
  }

  /**
   * Take a new config (SIGHUP): packs with `reload` get their new section; a pack whose section
   * changed without `reload`, or that was turned on or off, needs a restart.
   * @param config the new config.
   * @returns the packs that need a restart for their new config.
   */
  async reload(config: Config): Promise<string[]> {
    const needsRestart: string[] = [];
    const before = this.#config;
    this.#config = config;
    for (const pack of this.#options.packs) {
      const now = this.sectionOf(pack, config);
      const running = this.#running.get(pack.name);
      // A running pack is compared with the section it runs with: one whose reload failed is
      // given the new section again at the next SIGHUP (it was compared with the last file read,
      // so it kept its old section for good), and the packs after it still get theirs.
      const was = running?.config ?? this.sectionOf(pack, before);
      if (JSON.stringify(was) === JSON.stringify(now)) continue;
      if (running === undefined || running.handle.reload === undefined || !this.isEnabled(pack)) {
        needsRestart.push(`tools.${pack.name}`);
        continue;
      }
      try {
        await running.handle.reload(now);
        running.config = now;
      } catch (error) {
        this.#options.logger.error(
          { err: error, pack: pack.name },
          'tool pack could not take its new config; it keeps the one it had',
        );
      }
    }
    return needsRestart;
  }

  /** Stop every running pack (their servers, jobs); errors are logged. */
  async stop(): Promise<void> {
    const running = [...this.#running.values()].reverse();
    this.#running.clear();
    for (const r of running) {
      r.unsubscribe();
      r.controller.abort();
      try {
        await r.handle.stop();
      } catch (error) {
        this.#options.logger.error(
          { err: error, pack: r.pack.name },
          'tool pack did not stop cleanly',
        );
      }
      this.#options.registry.replacePack(r.pack.name, []);
    }
  }

  async #startPack(pack: ToolPack): Promise<void> {
    const { layout, logger, registry } = this.#options;
    const config = this.sectionOf(pack);
    const controller = new AbortController();
    const packsDir = this.#options.packsStateDir ?? join(layout.state, 'packs');
    const stateDir = join(packsDir, pack.name);
    const vaultRoot: PackRoot = { name: 'vault', path: layout.root, writable: true };
    // Resolved once for every pack of a start: a walk of each protected path's folders.
    const protection = await (this.#protection ??= resolveProtection(
      protectedPathsOf(layout, this.#config),
    ));
    const access = async (
      roots: readonly PackRoot[] = [],
      options: { vault?: boolean } = {},
    ): Promise<SharedAccess> =>
      createVaultAccess({
        roots: [...(options.vault === false ? [] : [vaultRoot]), ...roots],
        protection,
      });
    let files = await access();
    const ctx: PackContext = {
      config,
      vault: layout.root,
      stateDir,
      logger: logger.child({ pack: pack.name }),
      signal: controller.signal,
      access: async (roots, options) => {
        files = await access(roots, options);
        const entry = this.#running.get(pack.name);
        if (entry !== undefined) entry.files = files;
        return files as VaultAccess;
      },
    };
    await mkdir(packsDir, { recursive: true });
    const handle = await pack.start(ctx);
    let first = true;
    const sync = (): void => {
      const tools: Tool[] = [];
      for (const tool of handle.tools()) {
        const owner = registry.get(tool.name)?.pack;
        if (owner !== undefined && owner !== pack.name) {
          // Two packs never share a tool name: at start it stops the start, later it is logged.
          const message = `tool ${tool.name} of pack ${pack.name} has the name of a tool of pack ${owner}`;
          if (first) throw new Error(message);
          logger.error({ pack: pack.name, tool: tool.name, owner }, message);
          continue;
        }
        // A plugin's pack is checked here; the built-in packs' schemas compile on first use. At
        // start a schema Ajv cannot compile stops the start; later the tool is left out, logged.
        if (!BUILTIN_PACKS.includes(pack)) {
          try {
            checkToolSchemas(tool);
          } catch (error) {
            if (first) throw error;
            logger.error({ pack: pack.name, tool: tool.name, err: error }, 'tool left out');
            continue;
          }
        }
        tools.push(withPack(tool, pack.name));
      }
      const change = registry.replacePack(pack.name, tools);
      if (change.added.length > 0 || change.removed.length > 0) {
        logger.info({ pack: pack.name, ...change }, 'tools changed');
      }
    };
    try {
      sync();
    } catch (error) {
      await handle.stop().catch(() => undefined);
      throw error;
    }
    first = false;
    const unsubscribe = handle.onChange?.(sync) ?? (() => undefined);
    this.#running.set(pack.name, { pack, handle, controller, unsubscribe, config, files });
  }
}
