import type { Logger } from 'pino';
import type { JsonSchema, Tool, VaultAccess } from './types.ts';

/** A folder a pack's tools may work in, as configured (`roots:` of a pack's config). */
export interface PackRoot {
  /** Shown to agents; the vault is `vault`. */
  readonly name: string;
  readonly path: string;
  readonly writable: boolean;
}

/** What a pack gets when it starts. */
export interface PackContext<C = Record<string, unknown>> {
  /** The pack's config section `tools.<pack>`, validated against its schema, defaults applied, frozen. */
  readonly config: C;
  /** Absolute path of the vault. */
  readonly vault: string;
  /**
   * A folder of the pack's own inside vaultd's state (`.vaultd/packs/<pack>`), created on demand;
   * an empty temporary one when `vaultd check` or `vaultd tools` starts the pack.
   */
  readonly stateDir: string;
  readonly logger: Logger;
  /** Aborted when the daemon stops the pack. */
  readonly signal: AbortSignal;
  /**
   * Paths the pack's tools may touch: the vault (read-write, vaultd's own folders refused for
   * writes, its state for reads), plus the roots the pack asks for.
   * @param roots extra roots, e.g. from the pack's config.
   * @param options `vault: false` to leave the vault out.
   */
  access(roots?: readonly PackRoot[], options?: { vault?: boolean }): Promise<VaultAccess>;
}

/** A started pack. */
export interface PackHandle {
  /** The pack's tools now. */
  tools(): readonly Tool[];
  /** Subscribe to changes of `tools()` (an MCP server's list changed); returns the unsubscribe. */
  onChange?(listener: () => void): () => void;
  /** Take a new config (SIGHUP); without it a changed config needs a restart. */
  reload?(config: Record<string, unknown>): Promise<void>;
  /** Stop: servers, language servers, background jobs. Called after the daemon's queue drained. */
  stop(): Promise<void>;
}

/**
 * A family of tools: one folder under `src/tools/<pack>/`, one config section `tools.<pack>`,
 * started and stopped with the daemon. Plugins are packs too.
 */
export interface ToolPack<C = Record<string, unknown>> {
  /** snake_case; also the config key `tools.<name>`. */
  readonly name: string;
  /** One line for `vaultd tools` and TOOLS.md. */
  readonly description: string;
  /** Schema of `tools.<name>` (without `enabled` and `limits`, which every pack has). */
  readonly configSchema?: JsonSchema;
  /** Whether the pack runs when its config says nothing; default true. */
  readonly enabledByDefault?: boolean;
  /** An older config key that means the same section (`search_web` for `web`). */
  readonly legacyConfigKey?: string;
  /** The tools a listing shows before the pack starts (static packs; others list once started). */
  readonly staticTools?: readonly Tool[];
  /**
   * The tools a listing shows before the pack starts when they follow from its config section
   * (the commands pack's); used instead of `staticTools` where a section is at hand (TOOLS.md).
   * @param config the pack's section, validated, defaults applied.
   */
  listedTools?(config: C): readonly Tool[];
  start(ctx: PackContext<C>): PackHandle | Promise<PackHandle>;
}

/**
 * A pack whose tools are fixed: it needs nothing at start and nothing at stop.
 * @param spec the pack's name, description, config schema and tools.
 */
export function definePack<C = Record<string, unknown>>(spec: {
  readonly name: string;
  readonly description: string;
  readonly tools: readonly Tool[];
  readonly configSchema?: JsonSchema;
  readonly enabledByDefault?: boolean;
  readonly legacyConfigKey?: string;
}): ToolPack<C> {
  const tools = Object.freeze([...spec.tools]);
  return Object.freeze({
    name: spec.name,
    description: spec.description,
    ...(spec.configSchema === undefined ? {} : { configSchema: spec.configSchema }),
    ...(spec.enabledByDefault === undefined ? {} : { enabledByDefault: spec.enabledByDefault }),
    ...(spec.legacyConfigKey === undefined ? {} : { legacyConfigKey: spec.legacyConfigKey }),
    staticTools: tools,
    // Its tools read their config at each call, so a new config applies at once.
    start: () => ({
      tools: () => tools,
      reload: async () => undefined,
      stop: async () => undefined,
    }),
  });
}

/** Whether a value looks like a {@link ToolPack} (a plugin may export one). */
export function isToolPack(value: unknown): value is ToolPack {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v['name'] === 'string' && typeof v['start'] === 'function';
}
