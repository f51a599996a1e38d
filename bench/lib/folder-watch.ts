import { watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';

interface Waiter {
  readonly name: string;
  readonly resolve: (at: number) => void;
}

/**
 * Watches one folder (inotify through `fs.watch`) and records when each `.md` name first
 * appeared. Events are only a fast path: {@link FolderWatch.waitCount} also lists the folder every
 * `pollMs`, so an event lost to an inotify queue overflow cannot hang a measurement.
 */
export class FolderWatch {
  readonly #dir: string;
  readonly #seen = new Map<string, number>();
  readonly #watcher: FSWatcher;
  #waiters: Waiter[] = [];
  #lastAt = 0;

  /**
   * @param dir the folder to watch.
   */
  constructor(dir: string) {
    this.#dir = dir;
    this.#watcher = watch(dir, (_event, name) => {
      if (name === null || !name.endsWith('.md') || this.#seen.has(name)) return;
      const at = performance.now();
      this.#seen.set(name, at);
      this.#lastAt = at;
      if (this.#waiters.length === 0) return;
      const still: Waiter[] = [];
      for (const waiter of this.#waiters) {
        if (waiter.name === name) waiter.resolve(at);
        else still.push(waiter);
      }
      this.#waiters = still;
    });
  }

  /** Names seen so far. */
  get size(): number {
    return this.#seen.size;
  }

  /**
   * Resolve with the `performance.now()` at which `name` appeared, or undefined after `timeoutMs`.
   * @param name the file name.
   * @param timeoutMs the deadline.
   */
  waitFor(name: string, timeoutMs: number): Promise<number | undefined> {
    const seen = this.#seen.get(name);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w.resolve !== done);
        resolve(undefined);
      }, timeoutMs);
      const done = (at: number): void => {
        clearTimeout(timer);
        resolve(at);
      };
      this.#waiters.push({ name, resolve: done });
    });
  }

  /**
   * Wait until the folder holds at least `count` `.md` files; resolves with the time the last of
   * them was seen (event time, or poll time when the events fell short), or throws after
   * `timeoutMs`.
   * @param count how many files.
   * @param timeoutMs the deadline.
   * @param pollMs how often the folder is listed as a fallback; default 1 000.
   */
  async waitCount(count: number, timeoutMs: number, pollMs = 1_000): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    let nextPoll = performance.now() + pollMs;
    for (;;) {
      if (this.#seen.size >= count) return this.#lastAt;
      const now = performance.now();
      if (now >= nextPoll) {
        const listed = (await readdir(this.#dir)).filter((n) => n.endsWith('.md')).length;
        if (listed >= count) return performance.now();
        nextPoll = performance.now() + pollMs;
      }
      if (now > deadline) {
        throw new Error(
          `timed out after ${timeoutMs} ms: ${this.#seen.size} of ${count} notes seen in ${this.#dir}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  close(): void {
    this.#watcher.close();
  }
}
