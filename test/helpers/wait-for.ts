/**
 * Poll `predicate` until it returns a truthy value, or fail after `timeoutMs` with `message`.
 * @param predicate checked every `intervalMs`; may be async.
 * @param options deadline, poll interval and the failure message (a function is asked at the
 *   timeout, so it can say what was seen last).
 */
export async function waitFor<T>(
  predicate: () => T | Promise<T>,
  options: { timeoutMs?: number; intervalMs?: number; message?: string | (() => string) } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await predicate();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? ` (last error: ${last.message})` : '';
      const message = typeof options.message === 'function' ? options.message() : options.message;
      throw new Error(`waitFor timed out: ${message ?? 'condition not met'}${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}

/**
 * Poll `predicate` until it holds; the positional form the unit tests use.
 * @param predicate checked every 5 ms.
 * @param timeoutMs deadline; defaults to 5 s.
 * @param what named in the timeout error.
 */
export async function waitUntil(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  await waitFor(predicate, { timeoutMs, intervalMs: 5, message: what });
}
