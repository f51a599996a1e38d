import { killProcessesWhose } from '../../execute/proc-sweep.ts';

/**
 * Kill (SIGKILL) every process whose command line holds a sandbox's tag. A sandbox killed in its
 * first milliseconds can leave a bwrap child that has left vaultd's process group (new session)
 * before it asked to die with its parent; its command line still carries the tag.
 * @param tags the tags of the sandboxes just killed.
 * @returns how many processes were killed.
 */
export function killTagged(tags: readonly string[]): Promise<number> {
  if (tags.length === 0) return Promise.resolve(0);
  return killProcessesWhose('cmdline', (cmdline) => tags.some((tag) => cmdline.includes(tag)));
}

/** How often a killed sandbox's tag is swept for until its command has been reaped. */
const SWEEP_EVERY_MS = 500;

/**
 * Sweep for a sandbox's tag once it is being killed (its timeout passed or the call was aborted)
 * and every half second after, until `stop` is called: a survivor outside vaultd's process group
 * would otherwise keep the command's output pipes open, and the call would never end.
 * @param tag the sandbox's tag.
 * @param signal the call's signal.
 * @param timeoutMs when the command's own timeout kills it.
 * @returns stop sweeping (call it once the command has been reaped).
 */
export function sweepWhenKilled(tag: string, signal: AbortSignal, timeoutMs: number): () => void {
  let interval: NodeJS.Timeout | undefined;
  const begin = (): void => {
    if (interval !== undefined) return;
    interval = setInterval(() => void killTagged([tag]), SWEEP_EVERY_MS);
  };
  const timer = setTimeout(begin, timeoutMs + SWEEP_EVERY_MS);
  signal.addEventListener('abort', begin, { once: true });
  return () => {
    clearTimeout(timer);
    clearInterval(interval);
    signal.removeEventListener('abort', begin);
  };
}
