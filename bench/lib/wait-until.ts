/**
 * Poll `predicate` until it returns a truthy value; throw after `timeoutMs` naming `what`.
 * @param predicate checked every `intervalMs` (default 50); may be async.
 * @param timeoutMs the deadline.
 * @param what what was awaited, for the error message.
 * @param intervalMs poll interval; default 50.
 */
export async function waitUntil<T>(
  predicate: () => T | Promise<T>,
  timeoutMs: number,
  what: string,
  intervalMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * Resolve after `ms` milliseconds.
 * @param ms how long.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Run `fn` over `items` with at most `limit` calls in flight; resolves when all are done.
 * @param items the inputs.
 * @param limit most calls at once.
 * @param fn the work for one input.
 */
export async function forEachLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
