import type { Logger } from 'pino';
import type { ResultError } from '../protocol/errors.ts';
import type { Authorization, Gate } from '../approval/gate.ts';
import type {
  RateLimit,
  Tool,
  ToolCall,
  ToolProgress,
  ToolResult,
  VaultAccess,
} from '../protocol/types.ts';

/** Functions called around every call; their failures are logged and never fail the call. */
export interface ExecutorHooks {
  /** Once the call is valid and approved, right before it is looked up in the cache or run. */
  before?(call: ToolCall, tool: Tool): void | Promise<void>;
  /** For every result, last. */
  after?(call: ToolCall, result: ToolResult): void | Promise<void>;
  /** For every failed result, before `after`: the value the handler threw, or a `ToolError`. */
  error?(call: ToolCall, error: unknown): void | Promise<void>;
}

/** Settings of an {@link Executor}; every field has a default. */
export interface ExecutorOptions {
  /** Most handlers running at once, shared by every caller; default 10. */
  readonly concurrency?: number;
  /** Per call and per attempt; default 30 000 ms. */
  readonly timeoutMs?: number;
  /** Total attempts and the first backoff delay; default `{attempts: 3, baseDelayMs: 200}`. */
  readonly retry?: { readonly attempts: number; readonly baseDelayMs: number };
  /** How long read-only results are cached; default 60 000 ms, 0 disables. */
  readonly cacheTtlMs?: number;
  /** Rate limits by tool name, overriding each tool's own `rateLimit`. */
  readonly rateLimits?: Readonly<Record<string, RateLimit>>;
  /**
   * Decides every call that comes without an authorization (policy, grants, safety level); the
   * default runs safe and cautious calls and refuses dangerous ones, which need a human.
   */
  readonly gate?: Gate;
  readonly hooks?: ExecutorHooks;
  /** Default: silent. */
  readonly logger?: Logger;
  /** A tool's config section, handed to it as `ctx.config`; default `{}`. */
  readonly toolConfig?: (name: string) => Readonly<Record<string, unknown>>;
  /** Absolute path of the vault, handed to tools as `ctx.vault`. */
  readonly vault?: string;
  /**
   * What the file access of a tool outside any pack refuses (vaultd's folders, state, config):
   * a pack's tools get the pack host's access instead. Default: nothing.
   */
  readonly protectedPaths?: {
    readonly write: readonly string[];
    readonly read: readonly string[];
  };
  /**
   * A tool's config, file access and limits (the daemon takes them from the tool's pack); without
   * it `toolConfig` gives the config and the vault is the only root.
   */
  readonly runtime?: (tool: Tool) => ToolRuntime | undefined;
  /** Told about every file a call wrote (through `ctx.files.changed`), after the call. */
  readonly onFileChanged?: (event: FileChange) => void;
  /**
   * How long after its timeout or abort a handler may go on before it is reported as stuck (its
   * slot stays taken); default 10 000 ms.
   */
  readonly stuckGraceMs?: number;
}

/** What a tool gets from where it is configured. */
export interface ToolRuntime {
  /** The tool's pack config. */
  readonly config: Readonly<Record<string, unknown>>;
  /** Paths the tool may touch; default the vault. */
  readonly files?: VaultAccess;
  /** Per-tool overrides from config (`tools.<pack>.limits.<tool>`). */
  readonly timeoutMs?: number;
  readonly maxOutputBytes?: number;
  readonly rateLimit?: RateLimit;
}

/** A file a call wrote. */
export interface FileChange {
  /** Absolute real path. */
  readonly path: string;
  readonly callId: string;
  readonly tool: string;
  /** The note the call came from, when there is one. */
  readonly note: string | undefined;
}

/** Per-call options of {@link Executor.execute}. */
export interface ExecuteOptions {
  /**
   * The gate's permission for exactly this call and its normalised arguments (a human's decision,
   * a policy rule); without it the executor asks its gate.
   */
  readonly authorization?: Authorization;
  /** The arguments before a human modified them; recorded in the result's metadata. */
  readonly originalArguments?: Record<string, unknown>;
  /** Vault-relative path of the note the call came from (`ctx.note`). */
  readonly note?: string;
  /** Aborting it (e.g. daemon shutdown) ends the call with status `interrupted`. */
  readonly signal?: AbortSignal;
  /**
   * Awaited once, after validation and approval, right before the first attempt, only for tools
   * that are not read-only (record the intent durably); if it rejects the handler never runs.
   */
  onIntent?(call: ToolCall, tool: Tool): Promise<void>;
  /** Progress the handler reports. */
  onProgress?(progress: ToolProgress): void;
}

/** Outcome of {@link Executor.check}: the tool and validated arguments, or the error a run would give. */
export type CheckResult =
  | {
      readonly ok: true;
      readonly tool: Tool;
      readonly args: Record<string, unknown>;
      /**
       * The tool's path parameters as the agent spelled them (after `normalize`), where that
       * differs from the canonical path in `args`, and the vault paths of repository-relative
       * path lists: deny and ask rules match these too.
       */
      readonly spelledPaths?: Readonly<Record<string, string | readonly string[]>>;
    }
  | { readonly ok: false; readonly error: ResultError };
