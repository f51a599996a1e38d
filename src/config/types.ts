/** Names of the vault's state folders, relative to the vault root (SPEC section 1). */
export interface FolderNames {
  readonly inbox: string;
  readonly in_progress: string;
  readonly pending: string;
  readonly approved: string;
  readonly rejected: string;
  readonly done: string;
  readonly failed: string;
  readonly logs: string;
  readonly outbox: string;
}

/** A policy rule as written in config: `tool` or `tool(param:glob, …)`. */
export type PolicyRule = string;

/** The validated, defaulted, frozen configuration. Keys are snake_case as in the YAML file. */
export interface Config {
  /** Absolute path of the vault. */
  readonly vault: string;
  /** Global cap of tool calls running at once. */
  readonly concurrency: number;
  /** Per-call timeout. */
  readonly timeout_ms: number;
  /** How long a note that looks unfinished (unclosed fence, broken JSON) is left to settle. */
  readonly settle_ms: number;
  /** Notes larger than this get a NOTE_TOO_LARGE error instead of a parse. */
  readonly max_note_bytes: number;
  /**
   * A note with more `tool_call` blocks than this waiting for a result gets a NOTE_TOO_LARGE error
   * and runs nothing: each call's result and records cost memory and note text.
   */
  readonly max_calls_per_note: number;
  /** node-cron expression (seconds field allowed) of the reconcile scan. */
  readonly reconcile_cron: string;
  readonly cache_ttl_ms: number;
  readonly retry: { readonly attempts: number; readonly base_delay_ms: number };
  readonly folders: FolderNames;
  readonly log: {
    readonly level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  };
  /** Optional HTTP listener for /health, /metrics, /events; off when `port` is null. */
  readonly http: {
    readonly host: string;
    readonly port: number | null;
    /** Host names answered besides the loopback names (DNS rebinding protection). */
    readonly allowed_hosts: readonly string[];
    /** Browser origins answered; any other `Origin` is refused. */
    readonly allowed_origins: readonly string[];
    /** Connections open at once. */
    readonly max_connections: number;
    /** The environment variable holding the approvals API's bearer token; the API is off without it. */
    readonly api_token_env: string;
  };
  readonly shutdown: { readonly grace_ms: number };
  readonly approval: {
    /** Pending calls older than this are rejected with reason `approval expired`, e.g. `7d`, `12h`. */
    readonly expire_after: string;
    readonly expire_after_ms: number;
    readonly check_cron: string;
    /**
     * Whether ticks and moves in the vault count as decisions. Turn off where agents can write the
     * whole vault; then only `vaultd approve|reject` and the HTTP API decide.
     */
    readonly vault_decisions: boolean;
    /**
     * The most calls waiting for a human at once, over all notes: a call past it gets
     * `RATE_LIMITED` instead of a request (each waiting request is kept in memory).
     */
    readonly max_pending: number;
  };
  /** How long the ledger remembers calls with side effects, to never run one twice. */
  readonly ledger: {
    /** A re-saved note with the same name counts as the same note this long, e.g. `10m`. */
    readonly replay_window: string;
    readonly replay_window_ms: number;
    /** Calls with an explicit id are remembered this long, e.g. `30d`. */
    readonly retention: string;
    readonly retention_ms: number;
  };
  readonly policy: {
    readonly allow: readonly PolicyRule[];
    readonly ask: readonly PolicyRule[];
    readonly deny: readonly PolicyRule[];
  };
  /** Rewrite `Dashboard.md` in the vault at most this often; 0 turns it off. */
  readonly dashboard_interval_ms: number;
  /** Deadline for parsing or editing one large note in the worker thread. */
  readonly parse_timeout_ms: number;
  /** Modules of extra tools (absolute paths, resolved against the config file's folder). */
  readonly plugins: readonly string[];
  /** Per-tool sections: `tools.<name>.*`; each tool validates its own section. */
  readonly tools: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}
