import type { FormattedOutput } from './format-result.ts';

interface Entry {
  readonly output: FormattedOutput;
  readonly expiresAt: number;
}

/** Successful outputs of read-only calls, kept for a TTL; bounded, the oldest entry goes first. */
export class ResultCache {
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, Entry>();

  /**
   * @param ttlMs how long an output stays fresh; 0 disables the cache.
   * @param maxEntries most entries kept; default 1000.
   */
  constructor(ttlMs: number, maxEntries = 1000) {
    this.#ttlMs = ttlMs;
    this.#maxEntries = maxEntries;
  }

  /** The fresh output stored under `key`, or undefined. */
  get(key: string): FormattedOutput | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    // A copy, so a consumer that edits one result's data cannot change the next hit.
    const { content, data } = entry.output;
    return data === undefined ? { content } : { content, data: structuredClone(data) };
  }

  /** Store an output under `key` for the TTL. */
  set(key: string, output: FormattedOutput): void {
    if (this.#ttlMs <= 0) return;
    this.#entries.delete(key);
    if (this.#entries.size >= this.#maxEntries) this.#evict();
    this.#entries.set(key, { output, expiresAt: Date.now() + this.#ttlMs });
  }

  /** Drop every entry. */
  clear(): void {
    this.#entries.clear();
  }

  /** Number of entries, fresh or not yet swept. */
  get size(): number {
    return this.#entries.size;
  }

  #evict(): void {
    // Map iteration is insertion order and every entry has the same TTL, so the expired entries
    // are at the front: drop from the front while they are expired or the map is full. A full
    // sweep here would cost the whole map on every miss once the cache is full.
    const now = Date.now();
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAt > now && this.#entries.size < this.#maxEntries) break;
      this.#entries.delete(key);
    }
  }
}
