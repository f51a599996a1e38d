import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import { compilePolicy, GrantStore } from './approval/index.ts';
import type { Config } from './config/types.ts';
import { Executor } from './execute/index.ts';
import { NoteWorker } from './note/index.ts';
import { EventBus } from './observe/event-bus.ts';
import { ExecutionLog } from './observe/execution-log.ts';
import { silentLogger } from './observe/logger.ts';
import { startMonitor } from './observe/monitor.ts';
import { initSdNotify } from './observe/sd-notify.ts';
import type { ToolRegistry } from './protocol/index.ts';
import type { PipelineContext } from './pipeline/context.ts';
import { NoteQueue } from './pipeline/note-queue.ts';
import { handleNote, resumeNote } from './pipeline/process-note.ts';
import {
  acquireLock,
  ensureLayout,
  Ledger,
  resolveLayout,
  type VaultLayout,
} from './vault/index.ts';
import { listNotes } from './vault/scan.ts';
import { startWatcher, type FolderKind, type Watcher } from './vault/watcher.ts';

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
}

/** A running daemon. */
export interface Daemon {
  readonly layout: VaultLayout;
  readonly bus: EventBus;
  readonly executor: Executor;
  /** Notes queued, settling or being worked on. */
  queueDepth(): number;
  /** True once the first reconcile scan has queued everything that was waiting. */
  isReady(): boolean;
  /** Resolve when the queue is empty (for `vaultd once` and tests). */
  idle(): Promise<void>;
  /** URL of the HTTP listener when `http.port` is set. */
  readonly monitorUrl: string | undefined;
  /**
   * Take a new config (SIGHUP): policy, tool settings, log level, settle and approval times apply
   * at once; the keys it returns need a restart.
   */
  reload(config: Config): string[];
  /** Queue every note of the watched folders: what the watcher may have missed. */
  reconcile(): Promise<number>;
  /**
   * Stop: no new claims, running calls get `graceMs` to finish and be written back; after that
   * they are aborted and their notes stay in `In_Progress/` for the next start.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Start vaultd on a vault: lock it, resume notes a previous run left in progress, watch the inbox
 * and decision folders, and reconcile on a schedule.
 * @param options config, tool registry, logger and mode.
 */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { config, registry } = options;
  const logger = options.logger ?? silentLogger();
  const watchFolders = options.watch ?? true;
  // systemd's watchdog clock runs from the process start, so the pings start before anything slow.
  const systemd = initSdNotify(logger);
  const stopWatchdog = systemd.startWatchdog();
  const layout = resolveLayout(config);
  await ensureLayout(layout);
  const lock = await acquireLock(layout.state);
  const bus = new EventBus({ logger });
  bus.emit('daemon.state', { state: 'starting' });

  let currentConfig = config;
  const ledger = await Ledger.open(layout.state);
  const grants = await GrantStore.open(layout.state);
  const executionLog = new ExecutionLog(layout.logs);
  const shutdown = new AbortController();
  const notes = new NoteWorker({ timeoutMs: config.parse_timeout_ms });
  const executor = new Executor(registry, {
    concurrency: config.concurrency,
    timeoutMs: config.timeout_ms,
    retry: { attempts: config.retry.attempts, baseDelayMs: config.retry.base_delay_ms },
    cacheTtlMs: config.cache_ttl_ms,
    logger,
    vault: layout.root,
    toolConfig: (name) => currentConfig.tools[name] ?? {},
    rateLimits: rateLimitsFromConfig(config),
  });
  const ctx: { -readonly [K in keyof PipelineContext]: PipelineContext[K] } = {
    config,
    layout,
    registry,
    executor,
    ledger,
    executionLog,
    logger,
    bus,
    policy: compilePolicy(config.policy),
    grants,
    notes,
    shutdown: shutdown.signal,
  };

  const queue = new NoteQueue(
    options.noteConcurrency ?? Math.max(32, config.concurrency * 4),
    async (path, kind) => {
      const outcome =
        kind === 'in_progress' ? await resumeNote(ctx, path) : await handleNote(ctx, path, kind);
      options.onProgress?.(queue.depth - 1);
      return outcome;
    },
    (path, error) =>
      logger.error({ err: error, note: path }, 'note could not be processed; it stays where it is'),
  );

  const folders: { path: string; kind: FolderKind }[] = [
    { path: layout.inbox, kind: 'inbox' },
    { path: layout.pending, kind: 'pending' },
    { path: layout.approved, kind: 'approved' },
    { path: layout.rejected, kind: 'rejected' },
  ];

  let watcher: Watcher | undefined;
  if (watchFolders) {
    watcher = startWatcher({ folders, logger, onNote: (path, kind) => queue.add(path, kind) });
    await watcher.ready;
  }

  const reconcile = async (): Promise<number> => {
    let queued = 0;
    for (const folder of folders) {
      for (const path of await listNotes(folder.path)) {
        queue.add(path, folder.kind);
        queued++;
      }
    }
    return queued;
  };

  let ready = false;
  const monitor = await startMonitor({
    config,
    layout,
    bus,
    executor,
    logger,
    queueDepth: () => queue.depth,
    isReady: () => ready,
    isWatching: () => watcher !== undefined && ready,
  });

  for (const path of await listNotes(layout.inProgress)) queue.add(path, 'in_progress');
  const initial = await reconcile();
  logger.info({ vault: layout.root, queued: initial, watching: watchFolders }, 'vaultd ready');
  ready = true;
  bus.emit('daemon.state', { state: 'ready' });
  void systemd.ready(`watching ${layout.root}`);

  const tasks: ScheduledTask[] = [];
  if (watchFolders) {
    tasks.push(
      cron.schedule(
        config.reconcile_cron,
        async () => {
          const queued = await reconcile();
          logger.debug({ queued }, 'reconcile scan');
        },
        { noOverlap: true, name: 'reconcile' },
      ),
    );
    tasks.push(
      cron.schedule(
        config.approval.check_cron,
        async () => {
          for (const path of await listNotes(layout.pending)) queue.add(path, 'pending');
        },
        { noOverlap: true, name: 'approval-expiry' },
      ),
    );
  }

  let stopping: Promise<void> | undefined;
  const stop = (graceMs = config.shutdown.grace_ms): Promise<void> => {
    stopping ??= (async () => {
      ready = false;
      void systemd.stopping();
      bus.emit('daemon.state', { state: 'draining' });
      for (const task of tasks) await task.destroy();
      await watcher?.close();
      queue.pause();
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([queue.idle(), graceOver]);
      clearTimeout(timer);
      if (queue.running > 0) {
        logger.warn({ running: queue.running }, 'grace period over: aborting running calls');
        shutdown.abort();
        await queue.idle();
      }
      bus.emit('daemon.state', { state: 'stopped' });
      await monitor.close();
      stopWatchdog();
      await notes.close();
      await executionLog.close();
      await ledger.close();
      await lock.release();
      logger.info('vaultd stopped');
    })();
    return stopping;
  };

  const reload = (next: Config): string[] => {
    // What the running parts can take at once; the rest needs a restart, and is said so.
    const needsRestart = (
      [
        'vault',
        'concurrency',
        'timeout_ms',
        'folders',
        'http',
        'plugins',
        'reconcile_cron',
      ] as const
    ).filter((key) => JSON.stringify(next[key]) !== JSON.stringify(ctx.config[key]));
    ctx.policy = compilePolicy(next.policy);
    ctx.config = next;
    currentConfig = next;
    logger.level = next.log.level;
    logger.info({ needs_restart: needsRestart }, 'config reloaded');
    return needsRestart;
  };

  return {
    layout,
    bus,
    executor,
    monitorUrl: monitor.url,
    reload,
    queueDepth: () => queue.depth,
    isReady: () => ready,
    idle: () => queue.idle(),
    reconcile,
    stop,
  };
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
