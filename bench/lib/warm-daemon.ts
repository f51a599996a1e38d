import { spawnDaemon, type DaemonProcess } from './daemon-process.ts';
import { FolderWatch } from './folder-watch.ts';
import { echoNote } from './note-text.ts';
import type { BenchVault } from './temp-vault.ts';

/** A running daemon that has processed a probe note, and a watch on its `Done/`. */
export interface WarmDaemon {
  readonly daemon: DaemonProcess;
  readonly done: FolderWatch;
  /** Stop the daemon and the watch. */
  close(): Promise<void>;
}

/**
 * Start `vaultd run` on a vault and wait until a probe note dropped into the inbox reaches
 * `Done/`: ready in the sense that matters, and it works at log level warn, where the
 * `vaultd ready` line is not printed.
 * @param vault the vault.
 * @param timeoutMs how long the probe may take; default 30 s.
 */
export async function startWarmDaemon(vault: BenchVault, timeoutMs = 30_000): Promise<WarmDaemon> {
  const done = new FolderWatch(vault.folder('Done'));
  const daemon = spawnDaemon('run', vault.configPath);
  const close = async (): Promise<void> => {
    done.close();
    await daemon.stop();
  };
  try {
    // Dropped right away: it lands in the first reconcile scan or is seen by the watcher.
    await vault.drop('probe.md', echoNote(-1));
    const at = await Promise.race([
      done.waitFor('probe.md', timeoutMs),
      daemon.exited.then(() => undefined),
    ]);
    if (at === undefined)
      throw new Error(
        `probe note not in Done/ within ${timeoutMs} ms (exit ${String(daemon.exitCode())}):\n${daemon.tail()}`,
      );
  } catch (error) {
    await close();
    throw error;
  }
  return { daemon, done, close };
}
