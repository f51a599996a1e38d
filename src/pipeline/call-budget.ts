/**
 * How many calls the notes being worked on may hold at once. A note's calls, their results and
 * records stay in memory until the note is written back: one note of 10,000 calls added about
 * 190 MB of RSS, and 40 of them at once (the notes worked on at once) took the daemon past a
 * 256 MB heap, so a `MemoryMax=1G` unit would be killed and restarted on the same notes. A note
 * waits for its share before it is parsed; notes of a few calls never wait, so a large note of
 * slow calls cannot hold up the small ones.
 */
export class CallBudget {
  readonly capacity: number;
  #used = 0;
  readonly #waiting: { readonly weight: number; readonly grant: () => void }[] = [];

  /** @param capacity calls held at once; a note heavier than this runs alone. */
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** Calls held now. */
  get used(): number {
    return this.#used;
  }

  /**
   * Wait for `weight` calls of the budget, in the order asked (a heavy note is not passed by
   * lighter ones forever); a weight over the capacity waits until nothing else is held.
   * @param weight the note's calls.
   * @returns gives the share back; safe to call more than once.
   */
  async acquire(weight: number): Promise<() => void> {
    const share = Math.min(Math.max(0, weight), this.capacity);
    if (this.#waiting.length === 0 && this.#fits(share)) this.#used += share;
    else await new Promise<void>((grant) => this.#waiting.push({ weight: share, grant }));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#used -= share;
      this.#wake();
    };
  }

  #fits(share: number): boolean {
    return this.#used === 0 || this.#used + share <= this.capacity;
  }

  #wake(): void {
    for (let next = this.#waiting[0]; next !== undefined; next = this.#waiting[0]) {
      if (!this.#fits(next.weight)) return;
      this.#waiting.shift();
      this.#used += next.weight;
      next.grant();
    }
  }
}

/** Notes that mention `tool_call` at most this often never wait for the budget. */
export const LIGHT_NOTE_CALLS = 64;

/**
 * How many calls a note may hold, counted before it is parsed: the times its text says
 * `tool_call` (every call block does once; a result quoting it only makes the count larger).
 * @param text the note.
 * @param stopAt counting stops here.
 */
export function mentionsOfToolCall(text: string, stopAt: number): number {
  let count = 0;
  for (let at = text.indexOf('tool_call'); at >= 0 && count < stopAt;) {
    count++;
    at = text.indexOf('tool_call', at + 9);
  }
  return count;
}
