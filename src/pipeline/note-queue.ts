import type { FolderKind } from '../vault/watcher.ts';

/**
 * What the worker says about a note it looked at: nothing (done), or look again after a while,
 * possibly at another path (a note claimed, then deferred, waits in `In_Progress/`).
 */
export type JobOutcome = {
  readonly retryAfterMs: number;
  readonly path?: string;
  readonly kind?: FolderKind | undefined;
} | void;

/** When vaultd last saw a note change, by its own monotonic clock (never the file's mtime). */
export interface SeenInfo {
  /** Milliseconds since the last event for the path (or since it was first queued). */
  readonly sinceChangeMs: number;
  /** Whether the file was written in place (a `change` event), rather than dropped by a rename. */
  readonly inPlace: boolean;
  /** Whether the watcher reported the path since it was last looked at (not only a scan). */
  readonly byEvent?: boolean;
}

/** Work on one note path. */
export type QueueWorker = (path: string, kind: FolderKind, seen: SeenInfo) => Promise<JobOutcome>;

interface Entry {
  kind: FolderKind;
  state: 'queued' | 'waiting' | 'running';
  /** Another event came while it ran: look again afterwards. */
  again: boolean;
  timer: NodeJS.Timeout | undefined;
  /** `performance.now()` of the last event. */
  changedAt: number;
  inPlace: boolean;
  /** The watcher reported the path since the last look. */
  byEvent: boolean;
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
  #held = false;
  #idleWaiters: (() => void)[] = [];
  readonly #stillThere: (path: string) => boolean;

  /**
   * @param limit most notes worked on at once.
   * @param worker does the work; its rejection is reported to `onError`, never thrown.
   * @param onError told about a worker that threw.
   * @param stillThere whether a path still names something; an event that came while the note was
   *   worked on is looked into again only then (the event of the note's own claim, its rename out
   *   of the folder, comes while it runs). Default: always look again.
   */
  constructor(
    limit: number,
    worker: QueueWorker,
    onError: (path: string, error: unknown) => void,
    stillThere: (path: string) => boolean = () => true,
  ) {
    this.#limit = limit;
    this.#worker = worker;
    this.#onError = onError;
    this.#stillThere = stillThere;
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
   * @param event what the watcher saw: `change` for a write in place; none for a scan.
   */
  add(path: string, kind: FolderKind, event?: 'rename' | 'change'): void {
    const entry = this.#entries.get(path);
    const now = performance.now();
    if (entry === undefined) {
      this.#entries.set(path, {
        kind,
        state: 'queued',
        again: false,
        timer: undefined,
        changedAt: now,
        inPlace: event === 'change',
        byEvent: event !== undefined,
      });
      this.#ready.push(path);
      this.#pump();
      return;
    }
    if (event !== undefined) {
      entry.changedAt = now;
      entry.byEvent = true;
      if (event === 'change') entry.inPlace = true;
    }
    entry.kind = kind;
    if (entry.state === 'running') entry.again = true;
    else if (entry.state === 'waiting') {
      // A new write while settling: keep waiting; the worker decides again when the timer fires.
    }
  }

  /** Stop starting work for good (shutdown); running jobs finish. */
  pause(): void {
    this.#paused = true;
    for (const entry of this.#entries.values()) clearTimeout(entry.timer);
  }

  /** Whether the path is queued, waiting or running. */
  has(path: string): boolean {
    return this.#entries.has(path);
  }

  /**
   * Hold new work while a condition lasts (the vault gone, the lock lost); queued notes wait.
   * @param held true to hold, false to go on.
   */
  hold(held: boolean): void {
    this.#held = held;
    if (!held) this.#pump();
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
    while (
      !this.#paused &&
      !this.#held &&
      this.#running < this.#limit &&
      this.#readyHead < this.#ready.length
    ) {
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
    const byEvent = entry.byEvent;
    entry.byEvent = false;
    this.#running++;
    let outcome: JobOutcome = undefined;
    try {
      outcome = await this.#worker(path, entry.kind, {
        sinceChangeMs: performance.now() - entry.changedAt,
        inPlace: entry.inPlace,
        byEvent,
      });
    } catch (error) {
      this.#onError(path, error);
    }
    this.#running--;
    if (outcome && outcome.path !== undefined && outcome.path !== path) {
      // The note moved (claimed, then deferred): wait for it at its new path.
      this.#entries.delete(path);
      if (!this.#paused) this.#wait(outcome.path, outcome.kind ?? entry.kind, outcome.retryAfterMs);
    } else if (outcome && !this.#paused) {
      entry.state = 'waiting';
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        entry.state = 'queued';
        this.#ready.push(path);
        this.#pump();
      }, outcome.retryAfterMs);
    } else if (entry.again && !this.#paused && this.#stillThere(path)) {
      entry.state = 'queued';
      this.#ready.push(path);
    } else {
      this.#entries.delete(path);
    }
    this.#pump();
  }

  #wait(path: string, kind: FolderKind, ms: number): void {
    const existing = this.#entries.get(path);
    if (existing !== undefined) return;
    const entry: Entry = {
      kind,
      state: 'waiting',
      again: false,
      timer: undefined,
      changedAt: performance.now(),
      inPlace: false,
      byEvent: true,
    };
    this.#entries.set(path, entry);
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      entry.state = 'queued';
      this.#ready.push(path);
      this.#pump();
    }, ms);
  }
}
