import { startDaemon, type Daemon } from '../../daemon.ts';
import { createLogger } from '../../observe/logger.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { loadSetup } from '../setup.ts';
import { ConfigError, envValuesOf } from '../../config/index.ts';
import { changeConfig } from '../../config/load-config.ts';
import { collectSecrets, createRedactor } from '../../observe/redact.ts';
import { ToolRegistry } from '../../protocol/index.ts';
import { createProgressBar } from '../progress-bar.ts';
import { printable } from '../printable.ts';

/**
 * `vaultd run` and `vaultd once`: start the daemon; `run` stops on SIGTERM/SIGINT (a second signal
 * exits at once), `once` when the queue is empty.
 * @param options common options.
 * @param mode watch and keep running, or drain; a progress bar for `once` on a terminal.
 */
export async function runDaemonCommand(
  options: CommonOptions,
  mode: { watch: boolean; progress?: boolean },
): Promise<number> {
  const setup = await loadSetup(options);
  const { packs } = setup;
  // `once` drains and exits: it opens no HTTP port (a daemon may hold it, and nothing would have
  // time to read it). The copy keeps its file known, so the tools still may not read or write it.
  const config = mode.watch
    ? setup.config
    : changeConfig(setup.config, { http: { ...setup.config.http, port: null } });
  const registry = new ToolRegistry();
  const redact = createRedactor(collectSecrets(setup.config, envValuesOf(setup.config)));
  const bar =
    !mode.watch && mode.progress !== false ? createProgressBar(process.stderr) : undefined;
  // On one terminal the log lines go above the bar, never into its line.
  const logger = createLogger(
    config.log.level,
    1,
    redact,
    bar !== undefined && process.stdout.isTTY ? (write) => bar.around(write) : undefined,
  );
  // The handlers go in before the daemon starts: a process without a SIGTERM handler is killed at
  // once by the kernel, and a stop or reload during start-up (resuming notes, the first scan)
  // must be as graceful as one later on.
  let daemon: Daemon | undefined;
  let signals = 0;
  let reloadWaiting = false;
  let requestStop: () => void = () => undefined;
  const stopRequested = new Promise<void>((resolve) => (requestStop = resolve));
  const onSignal = (signal: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      // Second signal: exit now. Notes being worked on stay in In_Progress/ and the ledger has
      // the intent of every call with side effects, so the next start resumes them.
      logger.warn({ signal }, 'second signal: exiting at once');
      process.exit(EXIT.failure);
    }
    logger.info({ signal }, 'stopping: finishing running calls');
    requestStop();
  };
  const reload = (): void => {
    if (daemon === undefined) {
      reloadWaiting = true;
      return;
    }
    const running = daemon;
    loadSetup(options).then(
      (next) => {
        redact.add(collectSecrets(next.config, envValuesOf(next.config)));
        running.reload(next.config);
      },
      (error: unknown) =>
        logger.error({ err: error }, 'SIGHUP: the new config is invalid; keeping the running one'),
    );
  };
  if (mode.watch) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGHUP', reload);
  }
  try {
    daemon = await startDaemon({
      config,
      registry,
      packs,
      logger,
      redact,
      watch: mode.watch,
      ...(bar === undefined ? {} : { onProgress: (left: number) => bar.update(left) }),
    });
  } catch (error) {
    // One line for the person or the journal; the whole error only at debug level.
    logger.debug({ err: error }, 'vaultd could not start');
    process.stderr.write(`vaultd: ${printable(oneLine(error))}\n`);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('SIGHUP', reload);
    // A config the daemon cannot start with (an API token too short) is bad config: exit 2.
    return error instanceof ConfigError ? EXIT.usage : EXIT.failure;
  }
  if (!mode.watch) {
    await daemon.idle();
    await daemon.stop();
    bar?.done();
    return EXIT.ok;
  }
  if (reloadWaiting) reload();
  await stopRequested;
  await daemon.stop();
  return EXIT.ok;
}

function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? '';
}
