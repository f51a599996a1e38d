import { execFile } from 'node:child_process';
import type { Logger } from 'pino';
import { silentLogger } from './logger.ts';

// Node cannot send on a unix datagram socket, so notifications go through the systemd-notify
// binary, a child process. PID 1 attributes a message to a unit by the sender's cgroup, which it
// can only look up while the sender is alive; systemd-notify (systemd >= 246) waits on a barrier
// until PID 1 has read the message, so the lookup succeeds. The sender is not the main PID, so
// the unit needs NotifyAccess=all (any process of the unit's cgroup). See docs/service.md.

/** Options of {@link createSdNotifier}. */
export interface SdNotifierOptions {
  /**
   * Environment to read `NOTIFY_SOCKET`, `WATCHDOG_USEC`, `WATCHDOG_PID` from, and to run
   * `systemd-notify` with (its `PATH` finds the binary). Defaults to `process.env`, from which
   * the three variables are then removed so that tools the daemon starts cannot notify.
   */
  readonly env?: NodeJS.ProcessEnv;
  /** Where failures are reported; defaults to a silent logger. */
  readonly logger?: Logger;
  /** Our PID, sent as `MAINPID=` with readiness and compared with `WATCHDOG_PID`; defaults to `process.pid`. */
  readonly pid?: number;
  /** Longest a `systemd-notify` run may take before it is killed; defaults to 10 s. */
  readonly timeoutMs?: number;
}

/** Readiness, status and watchdog notifications to systemd; every method is a no-op outside systemd. */
export interface SdNotifier {
  /** Whether `NOTIFY_SOCKET` was set, i.e. notifications are sent at all. */
  readonly enabled: boolean;
  /** Watchdog ping interval in ms (half of `WATCHDOG_USEC`), or undefined when no watchdog applies to us. */
  readonly watchdogIntervalMs: number | undefined;
  /**
   * Send `READY=1` and `MAINPID=<our pid>`, with an optional status line.
   * @returns whether systemd-notify succeeded (false when disabled); never rejects.
   */
  ready(status?: string): Promise<boolean>;
  /** Send `STOPPING=1`; never rejects. */
  stopping(): Promise<boolean>;
  /** Send `STATUS=<text>` (shown by `systemctl status`); never rejects. */
  status(text: string): Promise<boolean>;
  /**
   * Ping `WATCHDOG=1` at once and then every half `WATCHDOG_USEC`, when systemd expects pings from
   * this process; a ping still running when the next is due is skipped, not queued.
   * @returns a function that stops the pings.
   */
  startWatchdog(): () => void;
}

const NOTIFY_VARS = ['NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID'] as const;

/**
 * Create a notifier that talks to systemd through the `systemd-notify` binary.
 * @param options environment (default `process.env`, scrubbed of the notify variables), logger,
 *   our pid (default `process.pid`), per-run timeout (default 10 s).
 */
export function createSdNotifier(options: SdNotifierOptions = {}): SdNotifier {
  const source = options.env ?? process.env;
  const logger = options.logger ?? silentLogger();
  const pid = options.pid ?? process.pid;
  const timeout = options.timeoutMs ?? 10_000;
  const socket = nonEmpty(source['NOTIFY_SOCKET']);
  const watchdogUsec = nonEmpty(source['WATCHDOG_USEC']);
  const watchdogPid = nonEmpty(source['WATCHDOG_PID']);
  if (source === process.env) for (const name of NOTIFY_VARS) delete process.env[name];
  const childEnv: NodeJS.ProcessEnv = { ...source };
  for (const name of NOTIFY_VARS) delete childEnv[name];
  if (socket !== undefined) childEnv['NOTIFY_SOCKET'] = socket;

  const watchdogIntervalMs =
    socket === undefined ? undefined : watchdogInterval(watchdogUsec, watchdogPid, pid, logger);
  let missingBinaryLogged = false;

  const send = (args: string[]): Promise<boolean> => {
    if (socket === undefined) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      try {
        execFile(
          'systemd-notify',
          args,
          { env: childEnv, timeout, windowsHide: true },
          (err, _stdout, stderr) => {
            if (err === null) {
              resolve(true);
              return;
            }
            const code = (err as NodeJS.ErrnoException).code;
            if (code === 'ENOENT') {
              if (!missingBinaryLogged)
                logger.error({ args }, 'systemd-notify not found on PATH; cannot notify systemd');
              missingBinaryLogged = true;
            } else {
              logger.warn({ err, args, stderr: stderr.trim() }, 'systemd-notify failed');
            }
            resolve(false);
          },
        );
      } catch (err) {
        logger.warn({ err, args }, 'cannot run systemd-notify');
        resolve(false);
      }
    });
  };

  return {
    enabled: socket !== undefined,
    watchdogIntervalMs,
    ready: (status) =>
      send([
        '--ready',
        `--pid=${pid}`,
        ...(status === undefined ? [] : [`--status=${oneLine(status)}`]),
      ]),
    stopping: () => send(['STOPPING=1']),
    status: (text) => send([`--status=${oneLine(text)}`]),
    startWatchdog() {
      if (watchdogIntervalMs === undefined) return () => {};
      let inFlight = false;
      const ping = (): void => {
        if (inFlight) {
          logger.warn('previous watchdog ping still running; skipping this one');
          return;
        }
        inFlight = true;
        void send(['WATCHDOG=1']).finally(() => {
          inFlight = false;
        });
      };
      ping();
      const timer = setInterval(ping, watchdogIntervalMs);
      // The pings must not be what keeps the process alive.
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

let defaultNotifier: SdNotifier | undefined;

/**
 * Create the process-wide notifier from `process.env` (removing the notify variables from it, so
 * tools started later cannot notify systemd); call it once, early, with the daemon's logger.
 * Later calls return the same notifier.
 * @param logger where failures are reported; defaults to a silent logger.
 */
export function initSdNotify(logger?: Logger): SdNotifier {
  defaultNotifier ??= createSdNotifier(logger === undefined ? {} : { logger });
  return defaultNotifier;
}

/**
 * Tell systemd start-up is complete (`READY=1`, `MAINPID=`), through the process-wide notifier.
 * @param status optional status line.
 */
export function notifyReady(status?: string): Promise<boolean> {
  return initSdNotify().ready(status);
}

/** Tell systemd the daemon is shutting down (`STOPPING=1`), through the process-wide notifier. */
export function notifyStopping(): Promise<boolean> {
  return initSdNotify().stopping();
}

/**
 * Set the status line `systemctl status` shows, through the process-wide notifier.
 * @param text the status; newlines are replaced by spaces.
 */
export function notifyStatus(text: string): Promise<boolean> {
  return initSdNotify().status(text);
}

/**
 * Start watchdog pings through the process-wide notifier, when systemd expects them from us.
 * @returns a function that stops them.
 */
export function startWatchdog(): () => void {
  return initSdNotify().startWatchdog();
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

function watchdogInterval(
  usec: string | undefined,
  watchdogPid: string | undefined,
  pid: number,
  logger: Logger,
): number | undefined {
  if (usec === undefined) return undefined;
  if (watchdogPid !== undefined && watchdogPid !== String(pid)) {
    logger.debug({ watchdogPid, pid }, 'watchdog is meant for another process');
    return undefined;
  }
  if (!/^\d+$/.test(usec) || Number(usec) === 0) {
    logger.warn({ WATCHDOG_USEC: usec }, 'ignoring invalid WATCHDOG_USEC');
    return undefined;
  }
  return Math.max(1, Math.floor(Number(usec) / 2000));
}
