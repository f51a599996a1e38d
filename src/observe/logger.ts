import { pino, type Logger, type LoggerOptions } from 'pino';
import { inertJsonLine } from '../cli/printable.ts';

/**
 * Create the daemon's logger: JSON lines on stdout (pipe through `pino-pretty` on a terminal).
 * Lines are written asynchronously so logging never blocks the event loop on a slow pipe or
 * journald; they are flushed when the process exits normally.
 * @param level pino level; defaults to `info`, or `VAULTD_LOG_LEVEL` when set.
 * @param destination file descriptor to write to; defaults to 1 (stdout).
 * @param redact applied to every line before it is written (secrets out of messages and errors).
 *   Every line also has its DEL, C1 control and format characters written as `\uXXXX` escapes.
 * @param around when given, lines are written synchronously inside it (a progress bar on the same
 *   terminal clears its line first and draws itself again after).
 */
export function createLogger(
  level?: string,
  destination = 1,
  redact?: (line: string) => string,
  around?: (write: () => void) => void,
): Logger {
  const options: LoggerOptions = {
    level: level ?? process.env['VAULTD_LOG_LEVEL'] ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const stream = pino.destination({ dest: destination, sync: around !== undefined });
  // A hard exit (a second signal) would drop what is still buffered.
  process.once('exit', () => {
    try {
      stream.flushSync();
    } catch {
      // Nothing more can be done for a log line at exit: stdout is gone.
    }
  });
  // Every line, messages, error messages and stacks included, goes through the redactor, and
  // then has what agents wrote (a note's name, an error quoting a call) made inert for a
  // terminal: bidi overrides and C1 controls as `\uXXXX`, the same JSON.
  const clean =
    redact === undefined ? inertJsonLine : (line: string): string => inertJsonLine(redact(line));
  const write =
    around === undefined
      ? (line: string) => stream.write(clean(line))
      : (line: string) => around(() => stream.write(clean(line)));
  return pino(options, { write });
}

/** A logger that drops everything, for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
