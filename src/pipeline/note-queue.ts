import type { FolderKind } from '../vault/watcher.ts';

/** What the worker says about a note it looked at. */
export type JobOutcome = { readonly retryAfterMs: number } | void;

/** Work on one note path. */
export type QueueWorker = (path: string, kind: FolderKind) => Promise<JobOutcome>;

interface Entry {
  kind: FolderKind;
  state: 'queued' | 'waiting' | 'running';
  /** Another event came while it ran: look again afterwards. */
  again: boolean;
  timer: NodeJS.Timeout | undefined;
}

/**
 * The daemon's queue of notes to look at: one entry per path (events for a path that is queued or
 * running coalesce), at most `limit` notes worked on at once, and a per-note timer for notes that
 * asked to settle.
 */
export class NoteQueue {
  readonly #limit: number;
  readonly #worker: QueueWorker;
  readonly #onError: (path: string, error: unknown) => void;
  readonly #entries = new Map<string, Entry>();
  readonly #ready: string[] = [];
  #readyHead = 0;
  #running = 0;
  #paused = false;
  #idleWaiters: (() => void)[] = [];

  /**
   * @param limit most notes worked on at once.
   * @param worker does the work; its rejection is reported to `onError`, never thrown.
   * @param onError told about a worker that threw.
   */
  constructor(limit: number, worker: QueueWorker, onError: (path: string, error: unknown) => void) {
    this.#limit = limit;
    this.#worker = worker;
    this.#onError = onError;
  }

  /** Notes queued, waiting to settle or running. */
  get depth(): number {
    return this.#entries.size;
  }

  /** Notes being worked on now. */
  get running(): number {
    return this.#running;
  }

  /**
   * Ask for a note to be looked at (again).
   * @param path absolute path of the note.
   * @param kind the folder kind it was seen in.
   */
  add(path: string, kind: FolderKind): void {
    const entry = this.#entries.get(path);
    if (entry === undefined) {
      this.#entries.set(path, { kind, state: 'queued', again: false, timer: undefined });
      this.#ready.push(path);
      this.#pump();
      return;
    }
    entry.kind = kind;
    if (entry.state === 'running') entry.again = true;
    else if (entry.state === 'waiting') {
      // A new write while settling: keep waiting; the worker decides again when the timer fires.
    }
  }

  /** Stop starting work; running jobs finish. */
  pause(): void {
    this.#paused = true;
    for (const entry of this.#entries.values()) clearTimeout(entry.timer);
  }

  /** Resolve when nothing is running (and, unless paused, nothing is queued). */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #isIdle(): boolean {
    return this.#running === 0 && (this.#paused || this.#entries.size === 0);
  }

  #pump(): void {
    while (!this.#paused && this.#running < this.#limit && this.#readyHead < this.#ready.length) {
      const path = this.#ready[this.#readyHead++] as string;
      if (this.#readyHead > 1024 && this.#readyHead * 2 > this.#ready.length) {
        this.#ready.splice(0, this.#readyHead);
        this.#readyHead = 0;
      }
      const entry = this.#entries.get(path);
      if (entry === undefined || entry.state !== 'queued') continue;
      void this.#run(path, entry);
    }
    if (this.#isIdle()) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  async #run(path: string, entry: Entry): Promise<void> {
    entry.state = 'running';
    entry.again = false;
    this.#running++;
    let outcome: JobOutcome = undefined;
    try {
      outcome = await this.#worker(path, entry.kind);
    } catch (error) {
      this.#onError(path, error);
    }
    this.#running--;
    if (outcome && !this.#paused) {
      entry.state = 'waiting';
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        entry.state = 'queued';
        this.#ready.push(path);
        this.#pump();
      }, outcome.retryAfterMs);
    } else if (entry.again && !this.#paused) {
      entry.state = 'queued';
      this.#ready.push(path);
    } else {
      this.#entries.delete(path);
    }
    this.#pump();
  }
}
