import type { Logger } from 'pino';
import type { ApprovalRequest } from '../approval/index.ts';
import { ConfigError } from '../config/config-error.ts';
import type { Config } from '../config/types.ts';
import type { Executor } from '../execute/index.ts';
import type { VaultLayout } from '../vault/index.ts';
import { writeFileAtomic } from '../vault/index.ts';
import { join } from 'node:path';
import { renderDashboard, type RecentCall } from './dashboard.ts';
import type { EventBus } from './event-bus.ts';
import { startHttpServer } from './http-server.ts';
import type { ApprovalsBackend } from './approvals-api.ts';
import type { createMetrics } from './metrics.ts';
import {
  ARCHIVE_STATES,
  archivesLookLarge,
  takeVaultSnapshot,
  type VaultSnapshot,
} from './vault-snapshot.ts';

/** What the monitor needs from the daemon. */
export interface MonitorOptions {
  readonly config: Config;
  readonly layout: VaultLayout;
  readonly bus: EventBus;
  readonly executor: Executor;
  readonly logger: Logger;
  queueDepth(): number;
  isReady(): boolean;
  isWatching(): boolean;
  /** Infrastructure conditions the daemon works around; /health is 503 while any holds. */
  conditions?(): readonly { code: string; message: string; since: string }[];
  /** The approvals the HTTP API lists and decides (off without a token). */
  readonly approvals?: ApprovalsBackend;
  /** How many calls wait for a human, as the request store holds them (the pending metric). */
  pendingApprovals(): number;
  /**
   * The approval requests (the daemon's store): the Dashboard lists the pending ones as the calls
   * waiting for a human, never what the notes' text claims (see `pendingNotes`).
   */
  approvalRequests(): readonly ApprovalRequest[];
}

/** The running observability: HTTP endpoints and `Dashboard.md`. */
export interface Monitor {
  /** The HTTP listener's URL, when `http.port` is set. */
  readonly url: string | undefined;
  close(): Promise<void>;
}

const RECENT_CALLS = 20;
// At rest nothing moves, so counting the archives again would be wasted work; a slow refresh
// still catches notes moved by hand.
const IDLE_REFRESH_MS = 5 * 60_000;
const FIRST_ARCHIVE_COUNT_DELAY_MS = 60_000;

/**
 * Start what lets an operator see the daemon: the optional HTTP listener (`/health`, `/metrics`,
 * `/events`) and `Dashboard.md`. Folder counts are taken in the background after notes moved,
 * never per event and never at start-up.
 * @param options the daemon's parts.
 */
export async function startMonitor(options: MonitorOptions): Promise<Monitor> {
  const { config, layout, bus, logger } = options;
  const dashboardOn = config.dashboard_interval_ms > 0;
  const httpOn = config.http.port !== null;
  const token = httpOn ? apiToken(config.http.api_token_env) : undefined;
  // Checked before anything starts: a listener that may not be opened stops the start.
  const refused = httpOn
    ? listenerProblem(config.http.host, config.http.api_token_env, token)
    : null;
  // A config the listener may not start with: exit 2, as for any bad config, so systemd does not
  // restart it (RestartPreventExitStatus=2).
  if (refused !== null) throw new ConfigError([], undefined, [refused]);
  if (!dashboardOn && !httpOn) return { url: undefined, close: async () => undefined };

  let snapshot: VaultSnapshot = { at: new Date().toISOString(), notes: {}, pending: [] };
  let dirty = true;
  let lastRefresh = 0;
  let archives: Record<string, number> | undefined;
  let lastArchiveCount = 0;
  const startedAt = Date.now();
  let firstCount: NodeJS.Timeout | undefined;
  let state = 'starting';
  const recent: RecentCall[] = [];
  const unsubscribe = bus.subscribe((event) => {
    if (event.name === 'tool.result') {
      const { result, note } = event.payload;
      recent.unshift({
        note,
        tool: result.name,
        callId: result.id,
        status: result.status,
        code: result.error?.code ?? null,
        ms: result.metadata.execution_time_ms,
        at: result.metadata.finished_at,
      });
      recent.length = Math.min(recent.length, RECENT_CALLS);
    } else if (event.name === 'daemon.state') {
      state = event.payload.state;
    } else if (event.name === 'note.moved' && archives !== undefined) {
      const moved = event.payload.state;
      if (moved in archives) archives[moved] = (archives[moved] ?? 0) + 1;
    }
    dirty = true;
  });

  let refreshing: Promise<void> | undefined;
  const refresh = (): Promise<void> =>
    (refreshing ??= (async () => {
      try {
        // Small archives are simply counted again (exact, and cheap). A large one (tens of
        // thousands of notes, told by the folders' size) is counted in full at most every
        // IDLE_REFRESH_MS, a note moved out of it by hand being seen then, and kept up by the
        // daemon's own moves in between; it is first counted a minute after start, not during it:
        // SPEC section 1 wants archives to cost nothing at start-up (200,000 names take ≈ 0.25 s
        // of CPU).
        if (!(await archivesLookLarge(layout))) {
          archives = undefined;
          snapshot = await takeVaultSnapshot(layout, undefined, options.approvalRequests());
        } else {
          let recount = archives === undefined || Date.now() - lastArchiveCount >= IDLE_REFRESH_MS;
          if (archives === undefined && Date.now() - startedAt < FIRST_ARCHIVE_COUNT_DELAY_MS) {
            recount = false;
            if (firstCount === undefined) {
              firstCount = setTimeout(() => {
                dirty = true;
                void tick();
              }, FIRST_ARCHIVE_COUNT_DELAY_MS);
              firstCount.unref();
            }
          }
          snapshot = await takeVaultSnapshot(
            layout,
            recount ? undefined : (archives ?? 'skip'),
            options.approvalRequests(),
          );
          if (recount) {
            archives = Object.fromEntries(ARCHIVE_STATES.map((s) => [s, snapshot.notes[s] ?? 0]));
            lastArchiveCount = Date.now();
          }
        }
        lastRefresh = Date.now();
      } catch (error) {
        logger.warn({ err: error }, 'could not count the vault folders');
      } finally {
        refreshing = undefined;
      }
    })());

  const interval = dashboardOn ? config.dashboard_interval_ms : 10_000;
  const tick = async (): Promise<void> => {
    if (!dirty && Date.now() - lastRefresh < IDLE_REFRESH_MS) return;
    dirty = false;
    await refresh();
    if (!dashboardOn) return;
    const text = renderDashboard({
      snapshot,
      recent,
      tools: options.executor.metrics(),
      pendingFolder: config.folders.pending,
      state,
      queueDepth: options.queueDepth(),
    });
    await writeFileAtomic(join(layout.root, 'Dashboard.md'), text, { fsyncDir: false }).catch(
      (error: unknown) => logger.warn({ err: error }, 'could not write Dashboard.md'),
    );
  };
  const timer = setInterval(() => void tick(), interval);
  timer.unref();

  let server: Awaited<ReturnType<typeof startHttpServer>> | undefined;
  let metrics: ReturnType<typeof createMetrics> | undefined;
  if (httpOn) {
    // prom-client is loaded only with the HTTP server on (off by default): a tenth of start-up.
    const { createMetrics } = await import('./metrics.ts');
    metrics = createMetrics(
      bus,
      {
        queueDepth: options.queueDepth,
        notesPerState: () => ({ ...snapshot.notes }),
        // From the request store, not the notes' text: a note written straight into
        // Pending_Approval/ with a forged section of 50 calls counted 50, and an agent deleting
        // its section hid a waiting call from alerts (review finding).
        pendingApprovals: options.pendingApprovals,
        stuckCalls: () => options.executor.stuck,
        conditions: () => options.conditions?.() ?? [],
      },
      { logger },
    );
    try {
      server = await startHttpServer({
        host: config.http.host,
        port: config.http.port as number,
        bus,
        metrics,
        logger,
        allowedHosts: config.http.allowed_hosts,
        allowedOrigins: config.http.allowed_origins,
        maxConnections: config.http.max_connections,
        ...(token === undefined ? {} : { apiToken: token }),
        ...(options.approvals === undefined ? {} : { approvals: options.approvals }),
        health: () => {
          const conditions = options.conditions?.() ?? [];
          return {
            ready: options.isReady() && conditions.length === 0,
            watching: options.isWatching(),
            queue_depth: options.queueDepth(),
            state: conditions.length > 0 ? 'degraded' : state,
            notes: snapshot.notes,
            conditions,
          };
        },
      });
    } catch (error) {
      // Nothing of the monitor may outlive a failed start.
      clearInterval(timer);
      unsubscribe();
      metrics.close();
      throw error;
    }
    const paths = ['/health', '/metrics', '/events'];
    // The approvals API exists only with a token (see serveApprovals).
    if (token !== undefined && options.approvals !== undefined) paths.push('/approvals');
    logger.info({ url: server.url }, `HTTP listener: ${paths.join(' ')}`);
  }

  return {
    url: server?.url,
    async close() {
      clearInterval(timer);
      clearTimeout(firstCount);
      unsubscribe();
      await tick().catch(() => undefined);
      await server?.close();
      metrics?.close();
    },
  };
}

/** Shortest API token taken: a guessable one opens approvals to anyone who can reach the port. */
export const MIN_TOKEN_LENGTH = 16;

/**
 * Why the HTTP listener may not start as configured, or null. Off loopback without a token, every
 * call's arguments and results (`/events`) were open to the network, and the Host check does not
 * stop a client that sends a loopback Host itself (review finding); a token of a few characters
 * is guessed.
 * @param host `http.host`.
 * @param tokenEnv `http.api_token_env`.
 * @param token the token, when set.
 */
export function listenerProblem(
  host: string,
  tokenEnv: string,
  token: string | undefined,
): string | null {
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH) {
    return `the API token in ${tokenEnv} has ${token.length} characters; use at least ${MIN_TOKEN_LENGTH} (e.g. \`openssl rand -hex 32\`)`;
  }
  if (token !== undefined && /\s/.test(token)) {
    return `the API token in ${tokenEnv} has whitespace in it, which no Authorization header can carry; remove the spaces and line breaks`;
  }
  if (token === undefined && !isLoopbackHost(host)) {
    return `http.host is ${host}, which is not a loopback address, and ${tokenEnv} holds no token: every call's arguments and results would be open to the network; set a token in ${tokenEnv}, or listen on 127.0.0.1`;
  }
  return null;
}

/** True for the names and addresses of the loopback interface. */
function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  return (
    name === 'localhost' ||
    name === '::1' ||
    /^127(?:\.\d{1,3}){3}$/.test(name) ||
    /^::ffff:127(?:\.\d{1,3}){3}$/.test(name)
  );
}

function apiToken(name: string): string | undefined {
  const token = process.env[name];
  return token === undefined || token === '' ? undefined : token;
}
