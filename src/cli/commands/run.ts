import { startDaemon } from '../../daemon.ts';
import { createLogger } from '../../observe/logger.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { loadSetup } from '../setup.ts';
import { createProgressBar } from '../progress-bar.ts';

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
  const { config, registry } = await loadSetup(options);
  const logger = createLogger(config.log.level);
  const bar =
    !mode.watch && mode.progress !== false ? createProgressBar(process.stderr) : undefined;
  let daemon;
  try {
    daemon = await startDaemon({
      config,
      registry,
      logger,
      watch: mode.watch,
      ...(bar === undefined ? {} : { onProgress: (left: number) => bar.update(left) }),
    });
  } catch (error) {
    logger.fatal({ err: error }, 'vaultd could not start');
    process.stderr.write(`vaultd: ${(error as Error).message}\n`);
    return EXIT.failure;
  }
  if (!mode.watch) {
    await daemon.idle();
    await daemon.stop();
    bar?.done();
    return EXIT.ok;
  }
  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals++;
      if (signals > 1) {
        // Second signal: exit now. Notes being worked on stay in In_Progress/ and the ledger has
        // the intent of every call with side effects, so the next start resumes them.
        logger.warn({ signal }, 'second signal: exiting at once');
        process.exit(EXIT.failure);
      }
      logger.info({ signal }, 'stopping: finishing running calls');
      void daemon.stop().then(() => resolve(EXIT.ok));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGHUP', () => {
      loadSetup(options).then(
        (next) => daemon.reload(next.config),
        (error: unknown) =>
          logger.error(
            { err: error },
            'SIGHUP: the new config is invalid; keeping the running one',
          ),
      );
    });
  });
}
