import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { ERROR_CODES, ToolError, type ErrorCode, type ResultError } from '../protocol/errors.ts';
import type { ToolRegistry } from '../protocol/registry.ts';
import { resolve } from 'node:path';
import type {
  ApprovedBy,
  CallFacts,
  FileRoot,
  RateLimit,
  ResultStatus,
  Tool,
  ToolCall,
  ToolContext,
  ToolProgress,
  ToolResult,
} from '../protocol/types.ts';
import { validateArguments } from '../protocol/validate.ts';
import { effectsOf, type Effects } from '../protocol/effects.ts';
import { createVaultAccess, type SharedAccess } from '../vault/access.ts';
import { canonicalPaths } from './canonical-paths.ts';
import { realPathSync } from '../vault/canonical-path.ts';
import { capFailure, capOutput, DEFAULT_MAX_OUTPUT_BYTES } from './output-cap.ts';
import type { CallProcesses } from './exec.ts';
import { hashArguments } from '../protocol/hash-arguments.ts';
import { ApprovalGate, sameIdentity, type Authorization, type Gate } from '../approval/gate.ts';
import { toolIdentity } from '../approval/grants.ts';
import { silentLogger } from '../observe/logger.ts';
import { raceAbort, sleep } from './abort.ts';
import { canonicalJson } from './canonical-json.ts';
import { findCloseNames } from '../protocol/close-names.ts';
import { formatOutput, type FormattedOutput } from './format-result.ts';
import { MetricsRecorder, type ToolMetrics } from './metrics.ts';
import { RateLimiter } from './rate-limiter.ts';
import { ResultCache } from './result-cache.ts';
import { truncate } from '../note/escape.ts';
import { startAttempt, type Attempt, type AttemptOutcome } from './run-attempt.ts';
import type {
  CheckResult,
  ExecuteOptions,
  ExecutorHooks,
  ExecutorOptions,
  ToolRuntime,
} from './types.ts';

interface Settings {
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly cacheTtlMs: number;
  readonly rateLimits: Readonly<Record<string, RateLimit>>;
  readonly hooks: ExecutorHooks;
  readonly logger: Logger;
  readonly stuckGraceMs: number;
}

/** A failed outcome on its way to becoming a result. */
interface Failure {
  readonly status: Exclude<ResultStatus, 'success'>;
  readonly error: ResultError;
  readonly data?: unknown;
  /** What the handler threw, for the `error` hook. */
  readonly thrown?: unknown;
  readonly sideEffect?: boolean;
}

/** Everything known about a call by the time its result is made. */
interface CallState {
  tool: Tool | undefined;
  effects: Effects | undefined;
  approvedBy: ApprovedBy | null;
  auth: Authorization | undefined;
  argsHash: string | undefined;
  originalArguments: Record<string, unknown> | undefined;
  startedAt: number;
  attempts: number;
  cached: boolean;
}

/**
 * Runs tool calls and turns every outcome into a result (SPEC sections 3, 5 and 6): validation,
 * approval of dangerous calls, a concurrency cap shared by every caller, per-attempt timeouts,
 * retries, caching of read-only results, rate limits, hooks and metrics. No error escapes it.
 */
export class Executor {
  readonly #registry: ToolRegistry;
  readonly #options: ExecutorOptions;
  readonly #settings: Settings;
  readonly #limit: LimitFunction;
  readonly #cache: ResultCache;
  readonly #rates = new RateLimiter();
  readonly #metrics = new MetricsRecorder();
  readonly #gate: Gate;
  #stuck = 0;

  /**
   * @param registry where tools are looked up, at each call (tools registered later are found).
   * @param options defaults: concurrency 10, timeoutMs 30 000, retry 3 attempts from 200 ms,
   *   cacheTtlMs 60 000, no approval handler (dangerous calls are refused), silent logger.
   * @throws Error quoting a bad option value.
   */
  constructor(registry: ToolRegistry, options: ExecutorOptions = {}) {
    this.#registry = registry;
    this.#options = options;
    this.#settings = Object.freeze(normaliseOptions(options));
    this.#limit = pLimit(this.#settings.concurrency);
    this.#cache = new ResultCache(this.#settings.cacheTtlMs);
    this.#gate = options.gate ?? new ApprovalGate();
  }

  /** Handlers running now (including those past their timeout that have not stopped yet). */
  get active(): number {
    return this.#limit.activeCount;
  }

  /**
   * Calls past their timeout or abort whose handler has not stopped (or whose processes are not
   * gone) after the grace period: their slots stay taken, and this says how many.
   */
  get stuck(): number {
    return this.#stuck;
  }

  /** Attempts waiting for a concurrency slot. */
  get pending(): number {
    return this.#limit.pendingCount;
  }

  /** Per-tool figures since start, by tool name. */
  metrics(): Record<string, ToolMetrics> {
    return this.#metrics.snapshot();
  }

  /** Forget every cached result. */
  clearCache(): void {
    this.#cache.clear();
  }

  /**
   * Check a call without running it: the tool exists and the arguments are valid.
   * @param call the call as written.
   * @returns the tool and the validated arguments (defaults applied), or the error a run would give.
   */
  check(call: ToolCall): CheckResult {
    if (typeof call !== 'object' || call === null || typeof call.name !== 'string') {
      return { ok: false, error: makeError('INVALID_CALL', 'a tool call needs a string "name"') };
    }
    const tool = this.#registry.get(call.name);
    if (tool === undefined) {
      return { ok: false, error: makeError('UNKNOWN_TOOL', this.#describeUnknown(call.name)) };
    }
    const checked = validateArguments(tool, call.arguments, this.#configFor(tool));
    if (!checked.ok) {
      return {
        ok: false,
        error: makeError(
          'INVALID_PARAMS',
          `invalid parameters for ${tool.name}: ${checked.message}`,
        ),
      };
    }
    const paths = canonicalPaths(tool, checked.args, this.#rootsFor(tool));
    if (typeof paths === 'string') {
      return {
        ok: false,
        error: makeError('INVALID_PARAMS', `invalid parameters for ${tool.name}: ${paths}`),
      };
    }
    return {
      ok: true,
      tool,
      args: paths.args,
      ...(paths.spelled === undefined ? {} : { spelledPaths: paths.spelled }),
    };
  }

  /**
   * Run one call. Never rejects: every outcome, including a bug, is a result.
   * @param call `{id, name, arguments}`.
   * @param options pre-approval, shutdown signal, intent recording, progress; all optional.
   */
  async execute(call: ToolCall, options: ExecuteOptions = {}): Promise<ToolResult> {
    const state: CallState = {
      tool: undefined,
      effects: undefined,
      approvedBy: null,
      auth: undefined,
      argsHash: undefined,
      originalArguments: undefined,
      startedAt: performance.now(),
      attempts: 0,
      cached: false,
    };
    try {
      return await this.#execute(call, options, state);
    } catch (error) {
      this.#settings.logger.error({ err: error, callId: call?.id }, 'executor failure');
      return this.#finish(call, state, {
        status: 'error',
        error: makeError(
          'EXECUTION_FAILED',
          `vaultd failed while running the call: ${messageOf(error)}`,
        ),
        thrown: error,
      });
    }
  }

  /**
   * Run several calls concurrently, within the shared cap.
   * @param calls the calls.
   * @param options applied to every call.
   * @returns one result per call, in input order.
   */
  executeAll(calls: readonly ToolCall[], options: ExecuteOptions = {}): Promise<ToolResult[]> {
    return Promise.all(calls.map((call) => this.execute(call, options)));
  }

  async #execute(call: ToolCall, options: ExecuteOptions, state: CallState): Promise<ToolResult> {
    const checked = this.check(call);
    state.tool = checked.ok ? checked.tool : this.#registry.get(call?.name);
    if (!checked.ok) return this.#finish(call, state, { status: 'error', error: checked.error });
    const { tool } = checked;
    const args = checked.args;
    const logger = this.#settings.logger.child({ tool: tool.name, callId: call.id });
    const runtime = await this.#runtimeOf(tool, logger);
    const config = runtime.config;
    if (options.signal?.aborted === true)
      return this.#finish(call, state, interrupted(tool, false));

    // Effects are decided once per call: the gate's decision carries them.
    const effects =
      options.authorization?.effects ??
      (await effectsOf(tool, args, { config, files: runtime.files }));
    state.effects = effects;
    const argsHash = hashArguments(args);
    // The gate is the only way to a handler: a permission issued for exactly this call and these
    // arguments, redeemed once.
    const identity = toolIdentity(tool);
    let auth = options.authorization;
    if (auth === undefined) {
      const verdict = this.#gate.evaluate({
        id: call.id,
        name: tool.name,
        arguments: args,
        spelledPaths: checked.spelledPaths,
        argsHash,
        safety: effects.safety,
        effects,
        identity,
      });
      if (verdict.action !== 'run') {
        const message =
          verdict.action === 'deny'
            ? verdict.message
            : `${tool.name} needs a human's decision (${verdict.reason}), and this call came with none; it was not run`;
        return this.#finish(call, state, {
          status: 'rejected',
          error: makeError('PERMISSION_DENIED', message),
        });
      }
      auth = verdict.auth;
    }
    if (!this.#gate.redeem(auth, { id: call.id, name: tool.name, argsHash, identity })) {
      return this.#finish(call, state, {
        status: 'rejected',
        error: makeError(
          'PERMISSION_DENIED',
          sameIdentity(auth.identity, identity)
            ? `no valid permission for this ${tool.name} call with these parameters (or the policy, reloaded since it was allowed, now denies it or asks a human first, or its always-allow grant was revoked); it was not run: write the call again to have it decided under the policy as it is now`
            : `${tool.name} changed after this call was allowed (its pack or its parameters are not the ones the grant, rule or human decided about); it was not run: write the call again to have it decided for ${tool.name} as it is now`,
        ),
      });
    }
    state.auth = auth;
    state.argsHash = argsHash;
    state.approvedBy = auth.approvedBy;
    state.originalArguments = options.originalArguments;
    if (effects.safety === 'cautious') logger.warn({ arguments: args }, 'running a cautious tool');
    // Execution time leaves out the wait for a human.
    state.startedAt = performance.now();
    await this.#callHook('before', logger, () => this.#settings.hooks.before?.(call, tool));

    const cacheKey =
      effects.readOnly && tool.cacheable !== false && this.#settings.cacheTtlMs > 0
        ? `${tool.name}\0${canonicalJson(args)}`
        : undefined;
    if (cacheKey !== undefined) {
      const hit = this.#cache.get(cacheKey);
      if (hit !== undefined) {
        state.cached = true;
        return this.#finish(call, state, hit);
      }
    }
    const waitMs = this.#rates.take(
      tool.name,
      runtime.rateLimit ?? this.#settings.rateLimits[tool.name] ?? tool.rateLimit,
    );
    if (waitMs > 0) {
      const message = `${tool.name} is over its rate limit; try again in ${formatDuration(waitMs)}`;
      return this.#finish(call, state, {
        status: 'error',
        error: makeError('RATE_LIMITED', message),
      });
    }
    const onIntent = options.onIntent;
    const recordIntent =
      !effects.readOnly && onIntent !== undefined
        ? async (): Promise<Failure | undefined> => {
            try {
              await onIntent(call, tool);
              return undefined;
            } catch (error) {
              const message = `could not record the intent of ${tool.name} before running it (${messageOf(error)}); the call was not run`;
              return {
                status: 'error',
                error: makeError('EXECUTION_FAILED', message),
                thrown: error,
              };
            }
          }
        : undefined;

    const changed = new Set<string>();
    const outcome = await this.#runWithRetries(
      call,
      tool,
      args,
      options,
      state,
      runtime,
      logger,
      recordIntent,
      changed,
    );
    // A call that may have changed something (a file written, a commit made) makes every cached
    // read-only answer stale: the next read asks the tool again.
    if (!effects.readOnly) this.#cache.clear();
    for (const path of changed) {
      try {
        this.#options.onFileChanged?.({
          path,
          callId: call.id,
          tool: tool.name,
          note: options.note,
        });
      } catch (error) {
        logger.warn({ err: error }, 'file change listener failed');
      }
    }
    const maxBytes = runtime.maxOutputBytes ?? tool.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if ('status' in outcome) {
      const { message, data } = capFailure(outcome.error.message, outcome.data, maxBytes);
      const { data: _unbounded, ...rest } = outcome;
      return this.#finish(call, state, {
        ...rest,
        error: { ...outcome.error, message },
        ...(data === undefined ? {} : { data }),
      });
    }
    const capped = capOutput(outcome, maxBytes);
    if (cacheKey !== undefined) this.#cache.set(cacheKey, capped);
    return this.#finish(call, state, capped);
  }

  /**
   * Hold a call's slot until its handler has settled and its processes are gone; a handler that
   * is still running a grace period after its outcome (it ignores its abort signal) is reported,
   * and its slot stays taken rather than the cap being silently exceeded.
   */
  async #holdSlot(run: Attempt, tool: Tool, call: ToolCall, logger: Logger): Promise<void> {
    await run.outcome;
    let stuck = false;
    const timer = setTimeout(() => {
      stuck = true;
      this.#stuck += 1;
      logger.error(
        { tool: tool.name, callId: call.id, processes: run.processes.groups },
        'a call went on after its timeout or abort: its slot stays taken until it stops',
      );
    }, this.#settings.stuckGraceMs);
    timer.unref();
    try {
      await run.settled;
    } finally {
      clearTimeout(timer);
      if (stuck) this.#stuck -= 1;
    }
  }

  #vaultRoots: readonly FileRoot[] | undefined;

  /** A tool's roots on their real paths, synchronously (for its path parameters). */
  #rootsFor(tool: Tool): readonly FileRoot[] {
    try {
      const files = this.#options.runtime?.(tool)?.files;
      if (files !== undefined) return files.roots;
    } catch {
      // The same failure is logged when the call runs (#runtimeOf); its access is the vault's.
    }
    const vault = this.#options.vault;
    if (vault === undefined) return [];
    if (this.#vaultRoots === undefined) {
      let path = resolve(vault);
      try {
        path = realPathSync(path);
      } catch {
        // The vault's own access fails the same way when the call runs.
      }
      this.#vaultRoots = [{ name: 'vault', path, writable: true }];
    }
    return this.#vaultRoots;
  }

  /** A tool's pack config, synchronously (for its `normalize`). */
  #configFor(tool: Tool): Readonly<Record<string, unknown>> {
    try {
      return this.#options.runtime?.(tool)?.config ?? this.#options.toolConfig?.(tool.name) ?? {};
    } catch {
      return {};
    }
  }

  /**
   * What a tool's effects function and preview may look at: its config and file access.
   * @param tool a registered tool.
   */
  async facts(tool: Tool): Promise<CallFacts> {
    const runtime = await this.#runtimeOf(tool, this.#settings.logger);
    return { config: runtime.config, files: runtime.files };
  }

  /** A tool's config, file access and limits, from the daemon's packs or the options. */
  async #runtimeOf(tool: Tool, logger: Logger): Promise<ToolRuntime & { files: SharedAccess }> {
    let runtime: ToolRuntime | undefined;
    try {
      runtime = this.#options.runtime?.(tool);
    } catch (error) {
      logger.error({ err: error }, 'reading the tool runtime failed');
    }
    const config = runtime?.config ?? this.#configOf(tool.name, logger);
    const files = (runtime?.files as SharedAccess | undefined) ?? (await this.#defaultAccess());
    return { ...runtime, config, files };
  }

  #access: Promise<SharedAccess> | undefined;

  #defaultAccess(): Promise<SharedAccess> {
    const vault = this.#options.vault;
    this.#access ??= createVaultAccess({
      roots: vault === undefined ? [] : [{ name: 'vault', path: vault, writable: true }],
      protectedForWrite: this.#options.protectedPaths?.write ?? [],
      protectedForRead: this.#options.protectedPaths?.read ?? [],
    });
    return this.#access;
  }

  async #runWithRetries(
    call: ToolCall,
    tool: Tool,
    args: Record<string, unknown>,
    options: ExecuteOptions,
    state: CallState,
    runtime: ToolRuntime & { files: SharedAccess },
    logger: Logger,
    recordIntent: (() => Promise<Failure | undefined>) | undefined,
    changed: Set<string>,
  ): Promise<FormattedOutput | Failure> {
    const { attempts: maxAttempts, baseDelayMs } = this.#settings;
    const timeoutMs = runtime.timeoutMs ?? tool.timeoutMs ?? this.#settings.timeoutMs;
    const files = runtime.files.forCall((path: string) => changed.add(path));
    const makeContext = (signal: AbortSignal, processes: CallProcesses): ToolContext => ({
      signal,
      logger,
      vault: this.#options.vault,
      note: options.note,
      callId: call.id,
      config: runtime.config,
      files,
      ...(state.effects === undefined ? {} : { effects: state.effects }),
      exec: (file, args, execOptions) => processes.exec(file, args, execOptions),
      progress: (update) => {
        try {
          options.onProgress?.(boundProgress(update));
        } catch (error) {
          logger.warn({ err: error }, 'progress listener failed');
        }
      },
    });
    for (let attempt = 1; ; attempt += 1) {
      const attemptInput = {
        tool,
        args,
        timeoutMs,
        signal: options.signal,
        makeContext,
        onStart: () => {
          state.attempts += 1;
        },
      };
      // The slot is taken by the handler and held until it has really settled and every process
      // it started is gone, even after the call timed out: the cap counts what runs. A call
      // aborted while queued answers at once. The intent of a call with side effects is recorded
      // inside the slot, just before the handler first runs: a call still queued at a crash
      // never started, and is not reported as interrupted.
      let intentFailure: Failure | undefined;
      let deliver: (outcome: AttemptOutcome) => void = () => undefined;
      const delivered = new Promise<AttemptOutcome>((resolve) => (deliver = resolve));
      void this.#limit(async () => {
        if (options.signal?.aborted === true) {
          deliver({ kind: 'interrupted', started: false });
          return;
        }
        if (attempt === 1 && recordIntent !== undefined) {
          intentFailure = await recordIntent();
          if (intentFailure !== undefined) {
            deliver({ kind: 'interrupted', started: false });
            return;
          }
        }
        const run = startAttempt(attemptInput);
        void run.outcome.then(deliver);
        await this.#holdSlot(run, tool, call, logger);
      }).catch((error: unknown) => {
        logger.error({ err: error }, 'executor slot failed');
        deliver({ kind: 'thrown', error });
      });
      const raced = await raceAbort(delivered, options.signal);
      if (intentFailure !== undefined) return intentFailure;
      const outcome: AttemptOutcome = raced.aborted
        ? { kind: 'interrupted', started: false }
        : raced.value;
      if (outcome.kind === 'ok') return formatOutput(outcome.value);
      const failure = toFailure(tool, outcome, timeoutMs, state.effects?.readOnly !== true);
      const retry =
        attempt < maxAttempts &&
        failure.status === 'error' &&
        failure.error.recoverable &&
        (state.effects?.readOnly === true || state.effects?.idempotent === true) &&
        failure.sideEffect !== true;
      if (!retry) return failure;
      const delay = baseDelayMs * 2 ** (attempt - 1) + Math.random() * baseDelayMs * 0.25;
      logger.info(
        { attempt, delayMs: Math.round(delay), code: failure.error.code },
        'retrying tool call',
      );
      if (await sleep(delay, options.signal)) return interrupted(tool, true);
    }
  }

  async #finish(
    call: ToolCall,
    state: CallState,
    outcome: FormattedOutput | Failure,
  ): Promise<ToolResult> {
    const tool = state.tool;
    const auth = state.auth;
    const metadata = {
      execution_time_ms: Math.round(performance.now() - state.startedAt),
      safety_level: state.effects?.safety ?? tool?.safety ?? null,
      approved_by: state.approvedBy,
      ...(auth === undefined
        ? {}
        : {
            decided_by: {
              channel: auth.channel,
              by: auth.by,
              request: auth.request,
              rule: auth.rule,
            },
          }),
      attempts: state.attempts,
      cached: state.cached,
      finished_at: new Date().toISOString(),
      ...(state.originalArguments === undefined
        ? {}
        : { original_arguments: state.originalArguments }),
      ...(state.effects === undefined || state.effects.readOnly
        ? {}
        : { may_have_acted: mayHaveActed(state, outcome) }),
    };
    const base = { id: String(call?.id ?? ''), name: String(call?.name ?? '') };
    let result: ToolResult;
    if ('status' in outcome) {
      result = {
        ...base,
        success: false,
        status: outcome.status,
        content: `Error (${outcome.error.code}): ${outcome.error.message}`,
        ...(outcome.data === undefined ? {} : { data: outcome.data }),
        error: {
          code: outcome.error.code,
          message: outcome.error.message,
          recoverable: outcome.error.recoverable,
        },
        metadata,
      };
    } else {
      result = {
        ...base,
        success: true,
        status: 'success',
        content: outcome.content,
        ...(outcome.data === undefined ? {} : { data: outcome.data }),
        error: null,
        metadata,
      };
    }
    const logger = this.#settings.logger;
    if (tool !== undefined && tool.name === result.name)
      this.#metrics.record(result, state.attempts > 0);
    if ('status' in outcome) {
      const thrown = outcome.thrown ?? new ToolError(outcome.error.code, outcome.error.message);
      await this.#callHook('error', logger, () => this.#settings.hooks.error?.(call, thrown));
    }
    await this.#callHook('after', logger, () => this.#settings.hooks.after?.(call, result));
    logger.debug(
      { callId: result.id, tool: result.name, status: result.status },
      'tool call finished',
    );
    return result;
  }

  async #callHook(
    name: string,
    logger: Logger,
    run: () => void | Promise<void> | undefined,
  ): Promise<void> {
    try {
      await run();
    } catch (error) {
      logger.error({ err: error, hook: name }, 'executor hook failed');
    }
  }

  #configOf(name: string, logger: Logger): Readonly<Record<string, unknown>> {
    try {
      return Object.freeze({ ...(this.#options.toolConfig?.(name) ?? {}) });
    } catch (error) {
      logger.error({ err: error }, 'reading the tool config failed');
      return Object.freeze({});
    }
  }

  #describeUnknown(name: string): string {
    const names = this.#registry.names();
    const close = findCloseNames(name, names);
    if (close.length > 0) return `no tool named '${name}'; did you mean: ${close.join(', ')}?`;
    if (names.length === 0) return `no tool named '${name}'; no tools are registered`;
    const shown = names.slice(0, 30).join(', ') + (names.length > 30 ? ', …' : '');
    return `no tool named '${name}'; available tools: ${shown}`;
  }
}

function toFailure(
  tool: Tool,
  outcome: Exclude<AttemptOutcome, { kind: 'ok' }>,
  timeoutMs: number,
  sideEffects: boolean,
): Failure {
  switch (outcome.kind) {
    case 'timeout':
      // A call with side effects that timed out may have acted (a message handed to a server
      // and then no answer): never recoverable, never retried, and the agent is told so.
      return sideEffects
        ? {
            status: 'error',
            error: {
              code: 'TIMEOUT',
              message: `${tool.name} did not finish within ${timeoutMs} ms and was aborted; it may or may not have taken effect (a message may have been sent): check before running it again`,
              recoverable: false,
            },
            sideEffect: true,
          }
        : {
            status: 'error',
            error: makeError(
              'TIMEOUT',
              `${tool.name} did not finish within ${timeoutMs} ms and was aborted`,
            ),
          };
    case 'interrupted':
      return interrupted(tool, outcome.started);
    case 'thrown': {
      const thrown = outcome.error;
      if (thrown instanceof ToolError) {
        return {
          status: 'error',
          error: { code: thrown.code, message: thrown.message, recoverable: thrown.recoverable },
          ...(thrown.data === undefined ? {} : { data: thrown.data }),
          thrown,
          sideEffect: thrown.sideEffect,
        };
      }
      return { status: 'error', error: makeError('EXECUTION_FAILED', messageOf(thrown)), thrown };
    }
  }
}

/**
 * Whether a call with side effects may have acted: it succeeded, or it started and did not fail
 * with a tool's own word that it failed before acting (a `ToolError` without `sideEffect`).
 */
function mayHaveActed(state: CallState, outcome: FormattedOutput | Failure): boolean {
  if (!('status' in outcome)) return true;
  if (state.attempts === 0) return false;
  if (outcome.status === 'interrupted') return true;
  if (outcome.error.code === 'TIMEOUT') return true;
  const thrown = outcome.thrown;
  if (thrown instanceof ToolError) return thrown.sideEffect;
  return true;
}

function interrupted(tool: Tool, started: boolean): Failure {
  const message = started
    ? `vaultd stopped while ${tool.name} was running; it was aborted, may or may not have taken effect, and was not re-run`
    : `vaultd stopped before ${tool.name} ran; it was not run`;
  return { status: 'interrupted', error: makeError('INTERRUPTED', message) };
}

function makeError(code: ErrorCode, message: string): ResultError {
  return { code, message, recoverable: ERROR_CODES[code].recoverable };
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message === '' ? error.name : error.message;
  return String(error);
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)} ms`;
  if (ms < 120_000) return `${Math.ceil(ms / 1000)} s`;
  return `${Math.ceil(ms / 60_000)} min`;
}

function normaliseOptions(options: ExecutorOptions): Settings {
  const concurrency = options.concurrency ?? 10;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retry = options.retry ?? { attempts: 3, baseDelayMs: 200 };
  const cacheTtlMs = options.cacheTtlMs ?? 60_000;
  requireNumber(
    'concurrency',
    concurrency,
    Number.isInteger(concurrency) && concurrency >= 1,
    'an integer ≥ 1',
  );
  requireNumber(
    'timeoutMs',
    timeoutMs,
    timeoutMs > 0 && timeoutMs <= 2_147_483_647,
    'a number of ms > 0',
  );
  requireNumber(
    'retry.attempts',
    retry.attempts,
    Number.isInteger(retry.attempts) && retry.attempts >= 1,
    'an integer ≥ 1',
  );
  requireNumber(
    'retry.baseDelayMs',
    retry.baseDelayMs,
    retry.baseDelayMs >= 0,
    'a number of ms ≥ 0',
  );
  requireNumber('cacheTtlMs', cacheTtlMs, cacheTtlMs >= 0, 'a number of ms ≥ 0');
  const rateLimits = options.rateLimits ?? {};
  for (const [name, limit] of Object.entries(rateLimits)) {
    const ok =
      Number.isInteger(limit?.max) &&
      limit.max > 0 &&
      typeof limit.windowMs === 'number' &&
      limit.windowMs > 0;
    if (!ok) {
      throw new Error(
        `executor option rateLimits.${name} must be {max: positive integer, windowMs: positive number}, got ${JSON.stringify(limit)}`,
      );
    }
  }
  return {
    concurrency,
    timeoutMs,
    attempts: retry.attempts,
    baseDelayMs: retry.baseDelayMs,
    cacheTtlMs,
    rateLimits,
    hooks: options.hooks ?? {},
    logger: options.logger ?? silentLogger(),
    stuckGraceMs: options.stuckGraceMs ?? 10_000,
  };
}

function requireNumber(name: string, value: unknown, ok: boolean, expected: string): void {
  if (typeof value !== 'number' || Number.isNaN(value) || !ok) {
    throw new Error(`executor option ${name} must be ${expected}, got ${JSON.stringify(value)}`);
  }
}

/** Characters of a progress message kept: it becomes an event the daemon keeps for replay. */
const MAX_PROGRESS_MESSAGE = 200;

// What a tool reports is the tool's (an MCP server's, whatever it relays): a message of 10 MiB
// in each of the 200 events kept for replay was 2 GB. The message is cut, the fraction finite
// and between 0 and 1, anything else dropped.
function boundProgress(update: ToolProgress): ToolProgress {
  const { message, fraction } = update as { message?: unknown; fraction?: unknown };
  return {
    ...(typeof message === 'string'
      ? {
          message: truncate(message, MAX_PROGRESS_MESSAGE),
        }
      : {}),
    ...(typeof fraction === 'number' && Number.isFinite(fraction)
      ? { fraction: Math.min(1, Math.max(0, fraction)) }
      : {}),
  };
}
