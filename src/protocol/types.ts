import type { Logger } from 'pino';
import type { ErrorCode, ResultError } from './errors.ts';

/** How much a call may do without a human: SPEC section 5. */
export type SafetyLevel = 'safe' | 'cautious' | 'dangerous';

/** The safety levels from least to most dangerous. */
export const SAFETY_LEVELS: readonly SafetyLevel[] = ['safe', 'cautious', 'dangerous'];

/** A JSON Schema object (draft-07 or 2020-12, as Ajv 8 understands them). */
export type JsonSchema = { [key: string]: unknown };

/** What a call may do, decided once per call from its tool and normalised arguments. */
export interface Effects {
  readonly safety: SafetyLevel;
  /** The call only reads: no ledger intent, results cached, recoverable failures retried. */
  readonly readOnly: boolean;
  /** Running it twice has the effect of running it once. */
  readonly idempotent: boolean;
  /** Why, for the human and the log (e.g. "the working tree has uncommitted changes"). */
  readonly reason?: string;
}

/** What an effects function may look at besides the arguments. */
export interface CallFacts {
  /** The tool's pack config (`tools.<pack>`), frozen. */
  readonly config: Readonly<Record<string, unknown>>;
  /** Paths the tool may touch, resolved inside its roots. */
  readonly files: VaultAccess;
}

/** A function of a call's normalised arguments giving its effects (may be async). */
// Declared as a method so that a tool of any argument type fits where tools of all types are held.
export type EffectsFunction<Args> = {
  effects(args: Args, facts: CallFacts): Effects | Promise<Effects>;
}['effects'];

/** A tool's effects: fixed, or a function of the normalised arguments. */
export type EffectsSpec<Args> = Effects | EffectsFunction<Args>;

/** What a preview was made from: the state of a file a human approves a change to. */
export interface PreviewBasis {
  /** Absolute real path of the file (for a `folder` entry: the path as the tool names it). */
  readonly path: string;
  /**
   * SHA-256 of its content when the preview was made (for a `folder` entry: of its identity, see
   * `folderIdentity`); null when it did not exist.
   */
  readonly sha256: string | null;
  /**
   * `folder`: the entry pins which folder the path leads to (its real path, device and inode), not
   * a file's content: a folder replaced, moved away or swapped for a link no longer fits.
   */
  readonly of?: 'folder';
}

/** What a call would do, shown to the human who decides it. */
export interface Preview {
  /** `diff` is a unified diff, shown in a `diff` block. */
  readonly kind: 'text' | 'diff';
  readonly text: string;
  /**
   * The files the preview was made from: checked again before an approved call runs, and when
   * one changed meanwhile the call is put before the human again instead of running.
   */
  readonly basis?: readonly PreviewBasis[];
}

/** What a preview gets. */
export interface PreviewContext {
  readonly config: Readonly<Record<string, unknown>>;
  readonly vault: string | undefined;
  readonly files: VaultAccess;
  /** Aborted at the preview deadline. */
  readonly signal: AbortSignal;
}

/** A path resolved inside one of a tool's roots, on its real path. */
export interface ResolvedPath {
  /** Absolute real path (symbolic links resolved, also for the parent of a file not yet there). */
  readonly path: string;
  /** The root it is in. */
  readonly root: FileRoot;
  /** Path relative to the root, with `/` separators (`.` for the root itself). */
  readonly relative: string;
  /** Whether something exists at the path now. */
  readonly exists: boolean;
}

/** A folder tools may work in. */
export interface FileRoot {
  /** Name shown to agents and in messages (the vault is `vault`). */
  readonly name: string;
  /** Absolute real path. */
  readonly path: string;
  readonly writable: boolean;
}

/**
 * Paths a tool may read or change: every path is resolved against a root and checked on its real
 * path, so `..`, absolute paths elsewhere, links pointing out, sibling prefixes and NUL bytes
 * cannot escape; vaultd's own folders are refused for writes (and its state for reads).
 */
export interface VaultAccess {
  readonly roots: readonly FileRoot[];
  /**
   * What no tool may write or read whatever the roots say, on real paths (vaultd's folders, state,
   * config file and plugins): a sandbox that shows the file system by path hides or freezes these.
   * Absent on an access that protects nothing.
   */
  readonly protectedPaths?: {
    readonly write: readonly string[];
    readonly read: readonly string[];
  };
  /**
   * Resolve a path an agent gave (relative to the first root, or absolute inside a root).
   * @throws ToolError `PERMISSION_DENIED` outside the roots or on a protected path, `INVALID_PARAMS`
   *   for a path that is not one (empty, NUL or control characters).
   */
  resolve(path: string, mode: 'read' | 'write'): Promise<ResolvedPath>;
  /** A path as agents should see it: `root-relative` for the vault, `name:relative` elsewhere. */
  display(resolved: ResolvedPath): string;
  /** Record that a call wrote a file (a `file.changed` event follows the call). */
  changed(path: string): void;
}

/** Options of {@link ToolContext.exec}. */
export interface ExecOptions {
  readonly cwd?: string;
  /** The whole environment of the child (nothing is inherited unless passed here). */
  readonly env?: Readonly<Record<string, string>>;
  /** Written to the child's stdin, then closed. */
  readonly input?: string;
  /** Bytes kept of stdout and of stderr each; default 1 MiB. */
  readonly maxOutputBytes?: number;
  /** Killed (the whole process group) after this long; default: only the call's signal. */
  readonly timeoutMs?: number;
}

/** How a child process ended. */
export interface ExecResult {
  /** Exit code, or null when a signal ended it. */
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Output beyond `maxOutputBytes` was dropped. */
  readonly truncated: boolean;
  /** It was killed because of `timeoutMs` or the call's signal. */
  readonly killed: boolean;
  readonly durationMs: number;
}

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
  /** This tool's pack config (`tools.<pack>`, defaults applied), frozen; `{}` when absent. */
  readonly config: Readonly<Record<string, unknown>>;
  /** Report progress; cheap, may be called often. */
  progress(update: ToolProgress): void;
  /** Paths the tool may read or change, resolved inside its roots. */
  readonly files: VaultAccess;
  /**
   * The effects the call was decided with (the gate's, computed before the call waited for a
   * human or a slot); absent when the handler is called outside the executor.
   */
  readonly effects?: Effects;
  /**
   * Run a program (never a shell) in a process group of its own, with capped output; the whole
   * group is killed when the call's signal aborts, and the call's concurrency slot is held until
   * every process of it is gone.
   */
  exec(file: string, args: readonly string[], options?: ExecOptions): Promise<ExecResult>;
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
  /**
   * JSON Schemas of the arguments by name (the arguments object is closed: no other key). Give
   * this or `input`.
   */
  readonly parameters?: { readonly [name: string]: JsonSchema };
  /** Names of required parameters; each must be declared in `parameters`. */
  readonly required?: readonly string[];
  /**
   * The whole JSON Schema of the arguments object (`type: object`; draft-07 or 2020-12, `null`,
   * `$defs`, open objects…), for tools whose schema comes from elsewhere (MCP servers).
   */
  readonly input?: JsonSchema;
  /** The most dangerous level a call can reach: what exports show and what `effects` may not exceed. */
  readonly safety: SafetyLevel;
  /**
   * The effects of one call, when they depend on its arguments (listing branches is safe, creating
   * one cautious). Without it: `safety`, `readOnly`, `idempotent` for every call.
   */
  readonly effects?: EffectsSpec<Args>;
  /** This tool's own timeout; default the daemon's `timeout_ms`. */
  readonly timeoutMs?: number;
  /** Output (content and data) kept of a result; default 256 KiB. */
  readonly maxOutputBytes?: number;
  readonly categories?: readonly string[];
  /** The tool only reads: results may be cached and recoverable failures retried. */
  readonly readOnly?: boolean;
  /**
   * Whether results of read-only calls may be answered from the cache (`cache_ttl_ms`); default
   * true. False for reads of things that change under the agent (files).
   */
  readonly cacheable?: boolean;
  /** Running the same call twice has the same effect as once: recoverable failures retried. */
  readonly idempotent?: boolean;
  /** The tool reaches beyond the vault (the web, a remote, a server): MCP's `openWorldHint`. */
  readonly openWorld?: boolean;
  /** JSON Schema of structured output (`data`), exported to MCP as `outputSchema`. */
  readonly outputSchema?: JsonSchema;
  /** JSON Schema of this tool's config section (`tools.<name>`), checked when the config loads. */
  readonly configSchema?: JsonSchema;
  /** Default rate limit; config `tools.<name>.rate_limit` overrides. */
  readonly rateLimit?: RateLimit;
  /**
   * The one normal form of valid arguments (schema defaults already applied): trim, Unicode NFC,
   * case-fold addresses, defaults that come from config, and the like. Policy, approval hashing,
   * the preview and the handler all see what it returns. Throw a `ToolError('INVALID_PARAMS', …)`
   * for values no normal form can save (control characters in a target, several targets in one
   * value). Gets the tool's pack config.
   */
  normalize?(args: Args, config: Readonly<Record<string, unknown>>): Args;
  /**
   * Parameters (strings) that name a file or folder through the tool's access (`ctx.files`):
   * after `normalize`, each is brought to its canonical path (resolved against the roots, `..`
   * and links resolved, vault-relative inside the vault), which is what policy, grants, approval,
   * the preview and the handler see. Default none.
   */
  readonly pathParameters?: readonly string[];
  /**
   * Parameters (lists of strings) of paths relative to a repository, each mapped to the path
   * parameter naming a folder in it (git's `paths` → `repo`; absent means the vault): the
   * repository is the folder at or above it holding `.git`, up to its root. After
   * `pathParameters`, each element is brought to its canonical form relative to that repository
   * (`.`, `..` and repeated slashes gone, an absolute path inside it made relative; names are
   * not resolved through links, as git reads them), which is what policy, grants, approval, the
   * preview and the handler see; deny and ask rules also match each element's vault path (links
   * resolved) and its spelling. Default none.
   */
  readonly repoPathParameters?: Readonly<Record<string, string>>;
  /**
   * Parameters an "always allow" box pins to the values of the call it is ticked on: the box
   * offers `always allow tool(param:"value", …)` instead of the whole tool (a shell's command,
   * its folder), so approving `npm test` for good does not grant every command. When a value
   * cannot be pinned exactly (not a one-line string), no box is offered. Default none.
   */
  readonly grantParameters?: readonly string[];
  /** What the call would do, shown when asking for approval; a string is a text preview. */
  preview?(
    args: Args,
    ctx: PreviewContext,
  ): string | Preview | undefined | Promise<string | Preview | undefined>;
  handler(args: Args, ctx: ToolContext): unknown;
}

/** A declared tool: the definition checked, frozen, with its validator compiled once. */
export interface Tool<Args = Record<string, unknown>> extends ToolDefinition<Args> {
  readonly categories: readonly string[];
  readonly parameters: { readonly [name: string]: JsonSchema };
  readonly required: readonly string[];
  readonly readOnly: boolean;
  readonly idempotent: boolean;
  /** The full JSON Schema of the arguments object. */
  readonly inputSchema: JsonSchema;
  /** The pack the tool came from (`web`, `filesystem`, a plugin's name…), when one did. */
  readonly pack?: string;
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
  /**
   * Hash of the call's arguments as the agent wrote them: a failed call whose arguments changed
   * since runs again when the note comes back.
   */
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
