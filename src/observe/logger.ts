import { pino, type Logger, type LoggerOptions } from 'pino';

/**
 * Create the daemon's logger: JSON lines on stdout (pipe through `pino-pretty` on a terminal).
 * @param level pino level; defaults to `info`, or `VAULTD_LOG_LEVEL` when set.
 * @param destination file descriptor to write to; defaults to 1 (stdout).
 */
export function createLogger(level?: string, destination = 1): Logger {
  const options: LoggerOptions = {
    level: level ?? process.env['VAULTD_LOG_LEVEL'] ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(options, pino.destination({ dest: destination, sync: true }));
}

/** A logger that drops everything, for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
