import type { RateLimit } from '../protocol/types.ts';

/** Sliding-window rate limits per tool: at most `max` calls started in any `windowMs`. */
export class RateLimiter {
  readonly #starts = new Map<string, number[]>();

  /**
   * Take a slot for `name` when the limit allows one.
   * @param name the tool.
   * @param limit the tool's limit; undefined means unlimited.
   * @returns 0 when a slot was taken, otherwise the milliseconds until one frees up.
   */
  take(name: string, limit: RateLimit | undefined): number {
    if (limit === undefined) return 0;
    const now = Date.now();
    const starts = (this.#starts.get(name) ?? []).filter((t) => t > now - limit.windowMs);
    if (starts.length >= limit.max) {
      this.#starts.set(name, starts);
      const oldest = starts[starts.length - limit.max] ?? now;
      return Math.max(1, oldest + limit.windowMs - now);
    }
    starts.push(now);
    this.#starts.set(name, starts);
    return 0;
  }
}
