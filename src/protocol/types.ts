import type { Logger } from 'pino';
import type { ErrorCode, ResultError } from './errors.ts';

/** How much a call may do without a human: SPEC section 5. */
export type SafetyLevel = 'safe' | 'cautious' | 'dangerous';

/** The safety levels from least to most dangerous. */
export const SAFETY_LEVELS: readonly SafetyLevel[] = ['safe', 'cautious', 'dangerous'];

/** A JSON Schema object, as Ajv 8 (draft-07 / 2019-09 keywords) understands it. */
export type JsonSchema = { [key: string]: unknown };

/** Progress a long-running handler may report; forwarded to the event stream. */
export interface ToolProgress {
  readonly message?: string;
  /** 0..1 when known. */
  readonly fraction?: number;
}

/** What a handler gets besides its arguments. */
export interface ToolContext {
  /** Aborted on timeout or shutdown; a handler must stop and kill any child process it started. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Absolute path of the vault, when the call comes from a vault note. */
  readonly vault: string | undefined;
  /** Vault-relative path of the note the call came from, when there is one. */
  readonly note: string | undefined;
  readonly callId: string;
  /** This tool's section of the config (`tools.<name>`), frozen; `{}` when absent. */
  readonly config: Readonly<Record<string, unknown>>;
  /** Report progress; cheap, may be called often. */
  progress(update: ToolProgress): void;
}

/** Per-tool rate limit: at most `max` calls started in any `windowMs`. */
export interface RateLimit {
  readonly max: number;
  readonly windowMs: number;
}

/** What a tool author writes: SPEC section 7. */
export interface ToolDefinition<Args = Record<string, unknown>> {
  /** snake_case, `^[a-z][a-z0-9_]*$`. */
  readonly name: string;
  /** Written for the model: what the tool does, when to use it, what it returns. */
  readonly description: string;
  /** JSON Schema of the `properties` of the arguments object (types string, boolean, number, integer, object, array). */
  readonly parameters: { readonly [name: string]: JsonSchema };
  /** Names of required parameters; each must be declared in `parameters`. */
  readonly required?: readonly string[];
  readonly safety: SafetyLevel;
  readonly categories?: readonly string[];
  /** The tool only reads: results may be cached and recoverable failures retried. */
  readonly readOnly?: boolean;
  /** Running the same call twice has the same effect as once: recoverable failures retried. */
  readonly idempotent?: boolean;
  /** JSON Schema of structured output (`data`), exported to MCP as `outputSchema`. */
  readonly outputSchema?: JsonSchema;
  /** JSON Schema of this tool's config section (`tools.<name>`), checked when the config loads. */
  readonly configSchema?: JsonSchema;
  /** Default rate limit; config `tools.<name>.rate_limit` overrides. */
  readonly rateLimit?: RateLimit;
  /**
   * The one normal form of valid arguments (schema defaults already applied): trim, Unicode NFC,
   * case-fold addresses and the like. Policy, approval hashing, the preview and the handler all
   * see what it returns. Throw a `ToolError('INVALID_PARAMS', …)` for values no normal form can
   * save (control characters in a target, several targets in one value).
   */
  normalize?(args: Args): Args;
  /** Human-readable preview of what the call would do, shown when asking for approval. */
  preview?(args: Args, ctx: Pick<ToolContext, 'config' | 'vault'>): string | Promise<string>;
  handler(args: Args, ctx: ToolContext): unknown;
}

/** A declared tool: the definition checked, frozen, with its validator compiled once. */
export interface Tool<Args = Record<string, unknown>> extends ToolDefinition<Args> {
  readonly categories: readonly string[];
  readonly required: readonly string[];
  readonly readOnly: boolean;
  readonly idempotent: boolean;
  /** The full JSON Schema of the arguments object (type object, properties, required, additionalProperties false). */
  readonly inputSchema: JsonSchema;
}

/** A request to run a tool: SPEC section 3. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/** Outcome of a call. */
export type ResultStatus = 'success' | 'error' | 'rejected' | 'interrupted';

/** Who let a call run. */
export type ApprovedBy = 'auto' | 'policy' | 'human' | 'human-modified';

/** Metadata of a result: SPEC section 3. */
export interface ResultMetadata {
  readonly execution_time_ms: number;
  readonly safety_level: SafetyLevel | null;
  readonly approved_by: ApprovedBy | null;
  readonly attempts: number;
  readonly cached: boolean;
  readonly finished_at: string;
  /** The agent's arguments, when `approved_by` is `human-modified`. */
  readonly original_arguments?: Record<string, unknown>;
  /** Who let the call run and through which channel (SPEC section 5). */
  readonly decided_by?: {
    /** `tick`, `move`, `cli`, `http` (a human), `policy`, `grant` or `auto`. */
    readonly channel: string;
    /** `human` in the vault, a user name for the CLI, `api` for HTTP; null without a human. */
    readonly by: string | null;
    /** The approval request a human decided. */
    readonly request: string | null;
    /** The policy rule or grant. */
    readonly rule: string | null;
  };
  /** Set when this result was recorded earlier and written again instead of running the call twice. */
  readonly replay?: { readonly note: string | null; readonly finished_at: string | null };
  /** Hash of the normalised arguments the call ran with. */
  readonly arguments_hash?: string;
  /**
   * For a tool with side effects: whether the call may have acted (false only when it failed
   * before acting, as the tool said, or never started). A call that may have acted is never run
   * again without a human.
   */
  readonly may_have_acted?: boolean;
}

/** One result per call; `success` is true exactly when `status` is `success`, then `error` is null. */
export interface ToolResult {
  readonly id: string;
  readonly name: string;
  readonly success: boolean;
  readonly status: ResultStatus;
  /** Always a string: what the model reads. */
  readonly content: string;
  /** Structured data, when the tool returned any. */
  readonly data?: unknown;
  readonly error: ResultError | null;
  readonly metadata: ResultMetadata;
}

export type { ErrorCode, ResultError };
