import { lstatSync, watch as watchFolder, type FSWatcher } from 'node:fs';
import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import {
  ApprovalGate,
  ApprovalRequests,
  compilePolicy,
  GrantStore,
  type CompiledPolicy,
} from './approval/index.ts';
import { readSubmittedDecisions } from './approval/decision-files.ts';
import { approvalsBackend } from './approval/approvals-backend.ts';
import { changeConfig } from './config/load-config.ts';
import type { Config } from './config/types.ts';
import { Executor } from './execute/index.ts';
import { limitLookups } from './execute/lookup-limit.ts';
import { NoteWorker } from './note/index.ts';
import { EventBus } from './observe/event-bus.ts';
import { ExecutionLog } from './observe/execution-log.ts';
import { silentLogger } from './observe/logger.ts';
import { createRedactor, type Redactor } from './observe/redact.ts';
import { startMonitor } from './observe/monitor.ts';
import { initSdNotify } from './observe/sd-notify.ts';
import type { ToolRegistry } from './protocol/index.ts';
import { CallBudget } from './pipeline/call-budget.ts';
import { Conditions } from './pipeline/conditions.ts';
import type { PipelineContext } from './pipeline/context.ts';
import { NoteQueue } from './pipeline/note-queue.ts';
import { handleNote } from './pipeline/process-note.ts';
import {
  acquireLock,
  ensureLayout,
  Ledger,
  readClaimedName,
  resolveLayout,
  type VaultLayout,
} from './vault/index.ts';
import { isInside } from './vault/access.ts';
import { isVanished } from './vault/fs-errors.ts';
import { mayBeUndecoded } from './vault/file-names.ts';
import { listNotes, moveUnnamable } from './vault/scan.ts';
import { assertInsideVault } from './vault/vault-writer.ts';
import { protectedPathsOf } from './vault/protected.ts';
import { onFastPathPause } from './vault/fs-calls.ts';
import type { ToolPack } from './protocol/pack.ts';
import { PackHost } from './tools/host.ts';
import { relative } from 'node:path';
import { scheduleCron, type Schedule } from './vault/schedule.ts';
import { startWatcher, type FolderKind, type Watcher } from './vault/watcher.ts';
import { oneAtATime } from './protocol/one-at-a-time.ts';

/** Options of {@link startDaemon}. */
export interface DaemonOptions {
  readonly config: Config;
  readonly registry: ToolRegistry;
  readonly logger?: Logger;
  /** Watch the folders and keep running (`vaultd run`); false drains what is there (`vaultd once`). */
  readonly watch?: boolean;
  /** Most notes worked on at once (tool calls are capped separately by `concurrency`). */
  readonly noteConcurrency?: number;
  /** Told how many notes are left whenever a note is done (for a progress bar). */
  readonly onProgress?: (left: number) => void;
  /** Removes the config's secrets from results, logs and events; default: URL user-info only. */
  readonly redact?: Redactor;
  /**
   * Tool packs to start (their tools go into `registry`, and stop with the daemon); without it the
   * registry's tools are used as they are.
   */
  readonly packs?: readonly ToolPack[];
}

/** What {@link Daemon.reload} did with a new config. */
export interface ReloadOutcome {
  /** False when the new config was refused; the running one stays. */
  readonly ok: boolean;
  /** Why it was refused. */
  readonly error?: string;
  /** Changed keys that only a restart applies. */
  readonly needsRestart: string[];
}

/** A running daemon. */
export interface Daemon {
  readonly layout: VaultLayout;
  readonly bus: EventBus;
  readonly executor: Executor;
  /** The one gate every call passes (policy, grants, approval requests). */
  readonly gate: ApprovalGate;
  /** Notes queued, settling or being worked on. */
  queueDepth(): number;
  /** True once the first reconcile scan has queued everything that was waiting. */
  isReady(): boolean;
  /** Resolve when the queue is empty (for `vaultd once` and tests). */
  idle(): Promise<void>;
  /** URL of the HTTP listener when `http.port` is set. */
  readonly monitorUrl: string | undefined;
  /** Infrastructure conditions being worked around now (disk full, lock lost…). */
  conditions(): { code: string; message: string; since: string }[];
  /**
   * Take a new config (SIGHUP), checked first: policy, tool settings, log level, settle and
   * approval times apply at once; the keys it returns need a restart. A bad config is refused
   * and the running one stays.
   */
  reload(config: Config): ReloadOutcome;
  /** Queue every note of the watched folders and orphans in `In_Progress/`. */
  reconcile(): Promise<number>;
  /**
   * Stop: no new claims, running calls get `graceMs` to finish and be written back; after that
   * they are aborted and their notes stay in `In_Progress/` for the next start.
   */
  stop(graceMs?: number): Promise<void>;
}

// How often the lock, the ledger file and the vault itself are checked (besides the watch on the
// state folder): a stat or two, cheap enough at rest.
const STATE_CHECK_MS = 2_000;
/**
 * A restore of the state folder that failed part-way is tried again at once while the watch hears
 * the folder change (this many times in a row), else after 50 ms, doubling, this many times.
 */
const STATE_RETRY_MS = 50;
const STATE_RETRIES = 5;
// After the grace period, aborted calls get this long to be written back before stop() goes on.
const ABORT_GRACE_MS = 3_000;

/**
 * Start vaultd on a vault: lock it, resume notes a previous run left in progress, watch the inbox
 * and decision folders, and reconcile on a schedule.
 * @param options config, tool registry, logger and mode.
 */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { config, registry } = options;
  const logger = options.logger ?? silentLogger();
  const redact = options.redact ?? createRedactor([]);
  const watchFolders = options.watch ?? true;
  // A bad policy fails before anything is locked or created.
  const policy = compilePolicy(config.policy);
  // systemd's watchdog clock runs from the process start, so the pings start before anything slow.
  const systemd = initSdNotify(logger);
  const stopWatchdog = systemd.startWatchdog();
  // Half of libuv's thread pool at most for DNS lookups: the rest is always there for file work
  // (bin/vaultd.js sizes the pool; libuv's own default is 4).
  limitLookups({ max: Math.floor((Number(process.env['UV_THREADPOOL_SIZE']) || 4) / 2) });
  const layout = resolveLayout(config);
  await ensureLayout(layout);
  const lock = await acquireLock(layout.state);
  const rootIdentity = await identityOf(layout.root);
  const bus = new EventBus({ logger, redact: redact.deep });
  bus.emit('daemon.state', { state: 'starting' });

  let started = false;
  // What was opened so far, closed again (newest first) when the start fails part-way.
  const opened: (() => unknown)[] = [];
  try {
    warnOfPluginsInVault(config, layout.root, logger);
    await removeStaleTempFiles(layout, logger);
    const inProgressAtStart = await listNotes(layout.inProgress);
    const ledger = await Ledger.open(layout.state, {
      replayWindowMs: config.ledger.replay_window_ms,
      retentionMs: config.ledger.retention_ms,
    });
    opened.push(() => ledger.close());
    const ledgerUntrusted =
      ledger.damage !== null || (!ledger.existed && inProgressAtStart.length > 0);
    if (ledger.damage !== null) {
      logger.error(
        { kept_at: ledger.damage.keptAt, bad_lines: ledger.damage.badLines },
        'the ledger was damaged: it was kept aside as evidence; calls whose history it may have held wait for a human',
      );
    } else if (ledgerUntrusted) {
      logger.error(
        { notes: inProgressAtStart.length },
        'the ledger is missing but notes wait in In_Progress: their calls with side effects wait for a human',
      );
    }
    const grants = GrantStore.open(layout.state);
    const requests = await ApprovalRequests.open(layout.state);
    opened.push(() => requests.close());
    const gate = new ApprovalGate({
      policy,
      grants,
      requests,
      expireAfterMs: config.approval.expire_after_ms,
    });
    const daemon = await run({
      options,
      config,
      registry,
      logger,
      redact,
      watchFolders,
      systemd,
      stopWatchdog,
      layout,
      lock,
      rootIdentity,
      bus,
      ledger,
      ledgerUntrusted,
      inProgressAtStart,
      gate,
      requests,
    });
    started = true;
    return daemon;
  } finally {
    if (!started) {
      await closeAll(opened);
      stopWatchdog();
      await lock.release().catch(() => undefined);
    }
  }
}

interface Parts {
  readonly options: DaemonOptions;
  readonly config: Config;
  readonly registry: ToolRegistry;
  readonly logger: Logger;
  readonly redact: Redactor;
  readonly watchFolders: boolean;
  readonly systemd: ReturnType<typeof initSdNotify>;
  readonly stopWatchdog: () => void;
  readonly layout: VaultLayout;
  readonly lock: Awaited<ReturnType<typeof acquireLock>>;
  readonly rootIdentity: string;
  readonly bus: EventBus;
  readonly ledger: Ledger;
  readonly ledgerUntrusted: boolean;
  readonly inProgressAtStart: readonly string[];
  readonly gate: ApprovalGate;
  readonly requests: ApprovalRequests;
}

/**
 * Start the daemon's parts; when one fails (the HTTP port is taken, a pack cannot start), stop
 * every part started before it, so that nothing keeps the process alive.
 */
async function run(parts: Parts): Promise<Daemon> {
  const started: (() => unknown)[] = [];
  try {
    return await assemble(parts, started);
  } catch (error) {
    await closeAll(started);
    throw error;
  }
}

async function closeAll(steps: (() => unknown)[]): Promise<void> {
  for (const step of steps.reverse()) {
    try {
      await step();
    } catch {
      // The start failed already: that error is the one to report.
    }
  }
}

async function assemble(parts: Parts, started: (() => unknown)[]): Promise<Daemon> {
  const { options, registry, logger, layout, lock, bus, ledger, gate, requests } = parts;
  let currentConfig = parts.config;
  const executionLog = new ExecutionLog(layout.logs, {
    vault: layout.root,
    onError: (error) => logger.error({ err: error }, 'execution log write failed'),
  });
  started.push(() => executionLog.close());
  const shutdown = new AbortController();
  // A note cannot wait on more calls than max_calls_per_note: a section of more is not read past
  // twice that (100,000 calls read in the worker took 150 ms of the main thread to receive).
  const notes = new NoteWorker({
    timeoutMs: currentConfig.parse_timeout_ms,
    maxSectionCalls: 2 * currentConfig.max_calls_per_note,
  });
  started.push(() => notes.close());
  // A slow file system is worth one warning; later pauses (one a minute while it stays slow) go
  // to the debug level.
  let warnedSlowFiles = false;
  const stopPauseLog = onFastPathPause((pause) => {
    const fields = { average_ms: pause.averageMs, pause_ms: pause.pauseMs };
    const message =
      "the vault's file system answered slowly (a moving average over 1 ms): a note's file calls go through the thread pool for a minute";
    if (warnedSlowFiles) logger.debug(fields, message);
    else logger.warn(fields, message);
    warnedSlowFiles = true;
  });
  started.push(stopPauseLog);
  const host =
    options.packs === undefined
      ? undefined
      : new PackHost({ packs: options.packs, config: currentConfig, layout, registry, logger });
  const executor = new Executor(registry, {
    concurrency: currentConfig.concurrency,
    timeoutMs: currentConfig.timeout_ms,
    retry: {
      attempts: currentConfig.retry.attempts,
      baseDelayMs: currentConfig.retry.base_delay_ms,
    },
    cacheTtlMs: currentConfig.cache_ttl_ms,
    logger,
    vault: layout.root,
    protectedPaths: protectedPathsOf(layout, currentConfig),
    gate,
    toolConfig: (name) => currentConfig.tools[name] ?? {},
    rateLimits: rateLimitsFromConfig(currentConfig),
    ...(host === undefined ? {} : { runtime: (tool) => host.runtime(tool) }),
    onFileChanged: (change) => {
      const inside = relative(layout.root, change.path);
      bus.emit('file.changed', {
        path: inside.startsWith('..') ? change.path : inside.split('\\').join('/'),
        tool: change.tool,
        callId: change.callId,
        note: change.note ?? null,
      });
    },
  });
  const unsubscribeTools = registry.onChange((change) =>
    bus.emit('tools.changed', { added: [...change.added], removed: [...change.removed] }),
  );
  started.push(unsubscribeTools);
  started.push(() => host?.stop());
  await host?.start();
  const conditions = new Conditions((event, condition) => {
    if (event === 'start') logger.error({ condition }, `condition: ${condition.message}`);
    else logger.info({ condition: condition.code }, 'condition cleared');
    bus.emit('daemon.state', { state: event === 'start' ? 'degraded' : 'ready' });
  });
  const ctx: { -readonly [K in keyof PipelineContext]: PipelineContext[K] } = {
    config: currentConfig,
    layout,
    registry,
    executor,
    ledger,
    executionLog,
    logger,
    bus,
    gate,
    notes,
    shutdown: shutdown.signal,
    untrustedNotes: new Set(parts.ledgerUntrusted ? parts.inProgressAtStart : []),
    redact: parts.redact,
    conditions,
    active: new Set(),
    requeue: (path, kind) => queue.add(path, kind),
    deferrals: new Map(),
    retryDeferred: parts.watchFolders,
    // Twice the largest note: two of those at once, and notes of a few calls beside them. Set at
    // start; a reload does not resize it.
    callBudget: new CallBudget(2 * currentConfig.max_calls_per_note),
  };

  const queue = new NoteQueue(
    options.noteConcurrency ?? Math.max(32, currentConfig.concurrency * 4),
    async (path, kind, seen) => {
      const outcome = await handleNote(ctx, path, kind, seen);
      options.onProgress?.(queue.depth - 1);
      return outcome;
    },
    (path, error) =>
      logger.error({ err: error, note: path }, 'note could not be processed; it stays where it is'),
    // One lstat on the main thread (a cached directory entry, no I/O) instead of a whole look that
    // finds nothing: every note claimed from a watched folder hears its own rename out of it.
    (path) => {
      try {
        return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
      } catch {
        return true; // the look itself reports what is wrong
      }
    },
  );

  const folders: { path: string; kind: FolderKind }[] = [
    { path: layout.inbox, kind: 'inbox' },
    { path: layout.pending, kind: 'pending' },
    { path: layout.approved, kind: 'approved' },
    { path: layout.rejected, kind: 'rejected' },
  ];

  // One pass at a time: watchers, the reconcile scan and start-up all ask for one, and two passes
  // would read the same file twice.
  const applyDecisionFiles = oneAtATime(() => applyDecisionFilesOnce());
  /**
   * Look at the note of a request just decided (CLI, HTTP) or expired, in the folder it is in. A
   * note being worked on right now (claimed in In_Progress/) is not claimed again: it goes back to
   * Pending_Approval/ with the calls still waiting, and is looked at there once it has landed and
   * its requests name it there (process-note.ts `finish` queues it through `ctx.requeue`).
   * @param note the request's vault-relative note path.
   */
  const queueRequestNote = (note: string): void => {
    const at = join(layout.root, note);
    const folder = dirname(at);
    if (folder === layout.inProgress) {
      queue.add(join(layout.pending, readClaimedName(basename(at)).original), 'pending');
      return;
    }
    const kind = folders.find((f) => f.path === folder)?.kind;
    if (kind !== undefined && kind !== 'inbox') queue.add(at, kind);
  };
  const applyDecisionFilesOnce = async (): Promise<void> => {
    for (const submitted of await readSubmittedDecisions(layout.state, (path, problem) =>
      logger.warn({ file: path, problem }, 'not a decision: removed'),
    )) {
      const outcome = await gate.decide(submitted.id, submitted.decision);
      await unlink(submitted.path).catch(() => undefined);
      if (!outcome.ok) {
        logger.warn({ request: submitted.id, problem: outcome.problem }, 'decision not applied');
        continue;
      }
      logger.info(
        {
          request: submitted.id,
          decision: submitted.decision.kind,
          channel: submitted.decision.channel,
          by: submitted.decision.by,
        },
        'decision received',
      );
      queueRequestNote(outcome.request.note);
    }
  };

  let watcher: Watcher | undefined;
  let stateWatch: FSWatcher | undefined;
  // The identity (device and inode) of the state folder that stateWatch is on.
  let watchedState: string | undefined;
  if (parts.watchFolders) {
    watcher = startWatcher({
      folders,
      logger,
      onNote: (path, kind, event) => queue.add(path, kind, event),
    });
    started.push(() => watcher?.close());
    await watcher.ready;
  }

  // Notes whose names are not valid UTF-8, listed with replacement characters (a name no file
  // has): moved aside by their bytes, so they are not left in the inbox without a word.
  const moveBadNames = async (): Promise<void> => {
    const unnamable = await moveUnnamable(layout.inbox, layout.failed, layout.root);
    for (const name of unnamable.moved)
      logger.error(
        { note: name, code: 'NOTE_NOT_TEXT' },
        "a note's file name is not valid UTF-8, so vaultd cannot name it: moved to Failed/ unchanged, unread; give it a UTF-8 name",
      );
    for (const { name, error } of unnamable.failed)
      logger.error(
        { note: name, err: error },
        "a note's file name is not valid UTF-8, and it could not be moved to Failed/; it stays in the inbox, unread",
      );
  };

  // Folders notes are taken from that are links now (an agent replaced one): not listed, so no
  // file from where the link points is read or taken; logged once each time one turns into a
  // link, and again when it is a folder again.
  const linkedFolders = new Set<string>();
  const readableFolder = async (dir: string): Promise<boolean> => {
    try {
      await assertInsideVault(layout.root, dir);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EOUTSIDE') return true; // missing: no notes
      if (!linkedFolders.has(dir))
        logger.error(
          { folder: dir, err: error },
          'a folder vaultd takes notes from is a symbolic link or under one: nothing is read or taken from it until it is a real folder again',
        );
      linkedFolders.add(dir);
      return false;
    }
    if (linkedFolders.delete(dir))
      logger.info({ folder: dir }, 'the folder is a real folder again: its notes are read');
    return true;
  };

  const reconcile = async (): Promise<number> => {
    let queued = 0;
    for (const folder of folders) {
      if (!(await readableFolder(folder.path))) continue;
      const paths = await listNotes(folder.path);
      if (folder.kind === 'inbox' && paths.some(mayBeUndecoded)) await moveBadNames();
      for (const path of paths) {
        queue.add(path, folder.kind);
        queued++;
      }
    }
    // Notes left in In_Progress/ by a failure that has cleared (permissions fixed, disk freed).
    for (const path of await listNotes(layout.inProgress)) {
      if (ctx.active.has(path) || queue.has(path)) continue;
      queue.add(path, 'in_progress');
      queued++;
    }
    await applyDecisionFiles();
    return queued;
  };

  let ready = false;
  const monitor = await startMonitor({
    config: currentConfig,
    layout,
    bus,
    executor,
    logger,
    queueDepth: () => queue.depth,
    isReady: () => ready,
    isWatching: () => watcher !== undefined && ready,
    conditions: () => conditions.list(),
    approvals: approvalsBackend(gate, (request) => queueRequestNote(request.note), executor),
    pendingApprovals: () => gate.requests?.waiting() ?? 0,
    approvalRequests: () => gate.requests?.pending() ?? [],
  });
  started.push(() => monitor.close());
  started.push(() => queue.pause());

  for (const path of await listNotes(layout.inProgress)) queue.add(path, 'in_progress');
  for (const expired of await requests.expireDue()) queueRequestNote(expired.note);
  const initial = await reconcile();
  logger.info(
    { vault: layout.root, queued: initial, watching: parts.watchFolders },
    'vaultd ready',
  );
  ready = true;
  bus.emit('daemon.state', { state: 'ready' });
  void parts.systemd.ready(`watching ${layout.root}`);

  // The state folder is watched so that its removal (or the lock's) is noticed at once; a
  // periodic check backs the watch up, and also notices the vault moving away.
  let checking = false;
  // An event that came during a check: the check runs again once done, so no removal is missed.
  let checkAgain = false;
  let stateRetry: NodeJS.Timeout | undefined;
  let stateRetries = 0;
  // Declared before any watcher can call checkState: an event may come at once. Checks wait until
  // everything they may call (stop, reconcile) is defined.
  let stopping: Promise<void> | undefined;
  let wired = false;
  const checkState = async (): Promise<void> => {
    if (!wired || stopping !== undefined) return;
    if (checking) {
      checkAgain = true;
      return;
    }
    checking = true;
    let failuresInARow = 0;
    try {
      for (;;) {
        checkAgain = false;
        try {
          await checkStateOnce();
          stateRetries = 0;
          failuresInARow = 0;
        } catch (error) {
          logger.error({ err: error }, 'state check failed');
          // A restore cut short by the folder being removed again (rm -r trying again while vaultd
          // wrote it back): the watch heard that removal, so look again at once, a few times in a
          // row; otherwise (or after that) try again soon, not at the next periodic check, by when
          // another vaultd could have taken the lock.
          failuresInARow++;
          if (!checkAgain || failuresInARow > STATE_RETRIES) {
            scheduleStateRetry();
            break;
          }
        }
        if (!checkAgain || stopping !== undefined) break;
      }
    } finally {
      checking = false;
    }
  };
  // 50 ms doubling, a few times; a lasting failure (a read-only vault) is left to the periodic
  // check. The count starts again after any check that went through.
  const scheduleStateRetry = (): void => {
    if (
      !conditions.has('lock_lost') ||
      stopping !== undefined ||
      stateRetry !== undefined ||
      stateRetries >= STATE_RETRIES
    )
      return;
    stateRetry = setTimeout(
      () => {
        stateRetry = undefined;
        void checkState();
      },
      STATE_RETRY_MS * 2 ** stateRetries,
    );
    stateRetry.unref();
    stateRetries++;
  };
  const checkStateOnce = async (): Promise<void> => {
    const here = await identityOf(layout.root).catch(() => 'gone');
    if (here !== parts.rootIdentity) {
      if (!conditions.has('vault_unavailable')) queue.hold(true);
      conditions.report(
        'vault_unavailable',
        `the vault folder ${layout.root} is gone or was replaced; waiting for it to come back before taking new work`,
      );
      return;
    }
    if (conditions.has('vault_unavailable')) {
      conditions.clear('vault_unavailable');
      queue.hold(false);
      void reconcile();
    }
    const held = await lock.check();
    const ledgerHere = await ledger.isCurrent();
    if (held === 'held' && ledgerHere) {
      if (conditions.has('lock_lost')) {
        conditions.clear('lock_lost');
        queue.hold(false);
      }
      // The watch may be on a folder that is gone: one removed while the watch was being made
      // (rm -r trying again while vaultd restored it) leaves the restored folder unwatched, and its
      // next removal would wait for the periodic check. Watch the folder that is there now, and
      // look once more for what changed meanwhile.
      const current = await identityOf(layout.state).catch(() => undefined);
      if (current !== undefined && current !== watchedState && (await watchStateFolders()))
        checkAgain = true;
      return;
    }
    queue.hold(true);
    if (held === 'replaced') {
      conditions.report(
        'lock_lost',
        'another process took the vault lock: this vaultd takes no new work; it finishes what runs and stops',
      );
      logger.fatal(
        'the vault lock was replaced by another process: stopping after the running notes',
      );
      void stop();
      return;
    }
    conditions.report(
      'lock_lost',
      `${held === 'gone' ? 'the vault lock' : 'the ledger file'} was removed while vaultd ran: no new work until the state folder is restored`,
    );
    await mkdir(layout.state, { recursive: true });
    // A watch on a removed folder hears nothing more: watch the new one first, so a second removal
    // (rm -r trying again) is noticed at once too, not at the next periodic check, by when another
    // vaultd could have taken the lock.
    await watchStateFolders();
    if (held === 'gone' && !(await lock.restore())) {
      logger.fatal('the vault lock was removed and another process took it: stopping');
      void stop();
      return;
    }
    // Write everything the ledger holds in memory back to its file, so nothing is forgotten.
    await ledger.compact();
    logger.warn('the state folder was restored from memory: the lock and the ledger are back');
    conditions.clear('lock_lost');
    queue.hold(false);
  };
  const stateTimer = setInterval(() => void checkState(), STATE_CHECK_MS);
  stateTimer.unref();
  let decisionsWatch: FSWatcher | undefined;
  // The state folder's watch and the decisions folder's, (re)made at start and after the state
  // folder was restored. The folder's own removal comes as an event named after it.
  const stateName = basename(layout.state);
  const watchStateFolders = async (): Promise<boolean> => {
    stateWatch?.close();
    decisionsWatch?.close();
    stateWatch = undefined;
    decisionsWatch = undefined;
    watchedState = undefined;
    try {
      // Read before the watch is made: a folder replaced in between is then seen as not watched.
      const identity = await identityOf(layout.state);
      stateWatch = watchFolder(layout.state, { persistent: false }, (_event, name) => {
        if (name === 'lock' || name === 'ledger.jsonl' || name === null || name === stateName)
          void checkState();
        else if (name.startsWith('decisions')) void applyDecisionFiles().catch(() => undefined);
      });
      stateWatch.on('error', () => undefined);
      watchedState = identity;
      const decisionsDir = join(layout.state, 'decisions');
      await mkdir(decisionsDir, { recursive: true, mode: 0o700 });
    } catch (error) {
      logger.warn(
        { err: error },
        'could not watch the state folder; the periodic check still runs',
      );
      // Removed again while it was being watched: the check that made this watch looks again at
      // once rather than at the next tick. (Any other failure, such as no inotify watches left, is
      // left to the periodic check.)
      if (isVanished(error)) checkAgain = true;
      return false;
    }
    if (!parts.watchFolders) return true;
    try {
      decisionsWatch = watchFolder(join(layout.state, 'decisions'), { persistent: false }, () => {
        void applyDecisionFiles().catch((error: unknown) =>
          logger.error({ err: error }, 'could not apply submitted decisions'),
        );
      });
      decisionsWatch.on('error', () => undefined);
    } catch {
      // The reconcile scan applies submitted decisions too.
    }
    return true;
  };
  await watchStateFolders();

  const schedules: Schedule[] = [];
  if (parts.watchFolders) {
    const onError = (error: unknown): void => logger.error({ err: error }, 'scheduled task failed');
    schedules.push(
      scheduleCron(
        currentConfig.reconcile_cron,
        async () => {
          if (conditions.has('vault_unavailable')) return;
          const queued = await reconcile();
          logger.debug({ queued }, 'reconcile scan');
        },
        { onError },
      ),
    );
    schedules.push(
      scheduleCron(
        currentConfig.approval.check_cron,
        async () => {
          for (const expired of await requests.expireDue()) queueRequestNote(expired.note);
        },
        { onError },
      ),
    );
  }

  const stop = (graceMs = currentConfig.shutdown.grace_ms): Promise<void> => {
    stopping ??= (async () => {
      ready = false;
      void parts.systemd.stopping();
      bus.emit('daemon.state', { state: 'draining' });
      for (const schedule of schedules) schedule.stop();
      clearInterval(stateTimer);
      clearTimeout(stateRetry);
      stateWatch?.close();
      decisionsWatch?.close();
      await watcher?.close();
      queue.pause();
      const graceOver = await waitOrTimeout(queue.idle(), graceMs);
      if (graceOver && queue.running > 0) {
        logger.warn({ running: queue.running }, 'grace period over: aborting running calls');
        shutdown.abort();
        // A handler that ignores its abort signal cannot hold the daemon: the notes it was on stay
        // in In_Progress/ with their intents in the ledger, and the next start reports them.
        if (await waitOrTimeout(queue.idle(), ABORT_GRACE_MS)) {
          logger.error(
            { running: queue.running },
            'calls did not stop after the abort; exiting without them',
          );
        }
      }
      // Packs stop once nothing runs: their servers, language servers and jobs end with them.
      await host?.stop();
      unsubscribeTools();
      stopPauseLog();
      bus.emit('daemon.state', { state: 'stopped' });
      await monitor.close();
      parts.stopWatchdog();
      await notes.close();
      await executionLog.close();
      await ledger.close();
      await requests.close();
      await lock.release().catch(() => undefined);
      logger.info('vaultd stopped');
    })();
    return stopping;
  };

  const reload = (next: Config): ReloadOutcome => {
    // What the running parts can take at once; the rest needs a restart, and is said so: the
    // parts below read these at start (the executor its retry and cache, the note worker its
    // timeout, the call budget and the worker's section limit max_calls_per_note, the monitor
    // its interval, the schedules their cron).
    const needsRestart = RESTART_KEYS.filter(
      (key) => JSON.stringify(valueAt(next, key)) !== JSON.stringify(valueAt(ctx.config, key)),
    );
    let nextPolicy: CompiledPolicy;
    try {
      nextPolicy = compilePolicy(next.policy);
    } catch (error) {
      const message = (error as Error).message;
      logger.error({ err: error }, 'SIGHUP: the new config is invalid; keeping the running one');
      return { ok: false, error: message, needsRestart: [] };
    }
    // Keys only a restart applies keep their running values until then: taken half-way, the
    // Approval text named decision folders nobody watched yet, and max_calls_per_note refused
    // notes the call budget and the note worker still sized for the old one (review finding).
    const effective = withRunningValues(next, ctx.config, RESTART_KEYS);
    gate.setPolicy(nextPolicy);
    gate.setExpireAfter(effective.approval.expire_after_ms);
    if (host !== undefined) {
      void host.reload(effective).then(
        (packs) => {
          if (packs.length > 0)
            logger.warn({ needs_restart: packs }, 'tool pack config changed; restart to apply it');
        },
        (error: unknown) =>
          logger.error({ err: error }, 'a tool pack could not take the new config'),
      );
    }
    ctx.config = effective;
    currentConfig = effective;
    logger.level = effective.log.level;
    // Changed keys that only a restart applies are said loudly, never silently ignored.
    if (needsRestart.length > 0) logger.warn({ needs_restart: needsRestart }, 'config reloaded');
    else logger.info({ needs_restart: needsRestart }, 'config reloaded');
    return { ok: true, needsRestart };
  };

  wired = true;
  return {
    layout,
    bus,
    executor,
    gate,
    monitorUrl: monitor.url,
    reload,
    conditions: () => conditions.list(),
    queueDepth: () => queue.depth,
    isReady: () => ready,
    idle: () => queue.idle(),
    reconcile,
    stop,
  };
}

/** Config keys (dotted for a key inside a section) that only a restart applies. */
const RESTART_KEYS = [
  'vault',
  'concurrency',
  'timeout_ms',
  'folders',
  'http',
  'plugins',
  'reconcile_cron',
  'ledger',
  'retry',
  'cache_ttl_ms',
  'parse_timeout_ms',
  'max_calls_per_note',
  'dashboard_interval_ms',
  'approval.check_cron',
] as const;

/**
 * `next` with the values `running` has at the given keys (dotted for a key inside a section),
 * still tied to the file and `${ENV}` values it was read with (changeConfig): a plain copy lost
 * them, and with them what keeps the tools from reading or writing the config file.
 * @param next the config read again.
 * @param running the config the daemon runs with.
 * @param keys the keys to keep.
 */
export function withRunningValues(next: Config, running: Config, keys: readonly string[]): Config {
  const out = structuredClone(next) as unknown as Record<string, unknown>;
  for (const key of keys) {
    const parts = key.split('.');
    const last = parts.pop() as string;
    let target = out;
    for (const part of parts) target = target[part] as Record<string, unknown>;
    target[last] = valueAt(running, key);
  }
  return changeConfig(next, out as unknown as Partial<Config>);
}

/** The value of a config key, dotted for a key inside a section. */
function valueAt(config: Config, key: string): unknown {
  let value: unknown = config;
  for (const part of key.split('.')) value = (value as Record<string, unknown>)[part];
  return value;
}

/** Resolve true when `ms` passed before `promise` settled. */
async function waitOrTimeout(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), ms);
  });
  const over = await Promise.race([promise.then(() => false), late]);
  clearTimeout(timer);
  return over;
}

async function identityOf(path: string): Promise<string> {
  const s = await stat(path);
  return `${s.dev}:${s.ino}`;
}

// Temp files of our atomic writes: `.<name>.vaultd-<pid>-<n>.tmp`, or `…-<n>-<hex>.tmp` when the
// first name was taken.
const TEMP_FILE = /^\..+\.vaultd-(\d+)-[0-9a-z]+(?:-[0-9a-f]+)?\.tmp$/;

/**
 * Remove temp files a killed vaultd left in the folders it writes (never the archives, which it
 * only moves into): those whose process is gone.
 */
async function removeStaleTempFiles(layout: VaultLayout, logger: Logger): Promise<void> {
  let removed = 0;
  for (const dir of [
    layout.inProgress,
    layout.state,
    join(layout.state, 'results'),
    layout.root,
    layout.outbox,
    layout.pending,
  ]) {
    let names: string[];
    try {
      // Never in a folder an agent replaced with a link: the files there are not vaultd's.
      await assertInsideVault(layout.root, dir);
      names = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const match = TEMP_FILE.exec(name);
      if (match === null) continue;
      const pid = Number(match[1]);
      if (pid !== process.pid && !pidExists(pid)) {
        await unlink(join(dir, name)).catch(() => undefined);
        removed++;
      }
    }
  }
  if (removed > 0) logger.info({ removed }, 'removed temp files left by a killed vaultd');
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function rateLimitsFromConfig(config: Config): Record<string, { max: number; windowMs: number }> {
  const limits: Record<string, { max: number; windowMs: number }> = {};
  for (const [name, section] of Object.entries(config.tools)) {
    const limit = section['rate_limit'] as { max?: unknown; window_ms?: unknown } | undefined;
    if (limit && typeof limit.max === 'number' && typeof limit.window_ms === 'number') {
      limits[name] = { max: limit.max, windowMs: limit.window_ms };
    }
  }
  return limits;
}

/**
 * Warn about each plugin module kept in the vault: no tool may change the module itself, but what
 * it imports (a module beside it, a `node_modules` folder above it) vaultd does not know, and a
 * tool writing there would run code in vaultd at its next start.
 * @param config the config, its plugins absolute.
 * @param vault the vault's path.
 * @param logger where the warning goes.
 * @returns the plugins warned about.
 */
export function warnOfPluginsInVault(
  config: Pick<Config, 'plugins'>,
  vault: string,
  logger: Logger,
): string[] {
  const inside = config.plugins.filter((plugin) => isInside(plugin, vault));
  for (const plugin of inside) {
    logger.warn(
      { plugin, vault },
      'plugin kept in the vault: tools cannot change it, but the modules it imports could be changed; keep plugins outside the vault (docs/packs.md)',
    );
  }
  return inside;
}
