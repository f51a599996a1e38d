type Callback = () => void;

// One listener per signal, however many calls share it: a daemon's shutdown signal is shared by
// every running call, and many listeners on one AbortSignal make Node warn about a leak.
const watchers = new WeakMap<AbortSignal, Set<Callback>>();

/**
 * Call `callback` once when `signal` aborts (at once when it already has).
 * @param signal the signal to watch.
 * @param callback called at most once.
 * @returns a function that stops watching.
 */
export function watchAbort(signal: AbortSignal, callback: Callback): () => void {
  if (signal.aborted) {
    callback();
    return () => {};
  }
  let callbacks = watchers.get(signal);
  if (callbacks === undefined) {
    const set = new Set<Callback>();
    callbacks = set;
    watchers.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        const pending = [...set];
        set.clear();
        for (const cb of pending) cb();
      },
      { once: true },
    );
  }
  const entry: Callback = () => callback();
  callbacks.add(entry);
  const set = callbacks;
  return () => {
    set.delete(entry);
  };
}

/**
 * Wait for a promise unless a signal aborts first.
 * @param promise what to wait for; a later rejection is still handled.
 * @param signal optional; without it this is just the promise.
 * @returns the value, or `{aborted: true}` when the signal aborted first.
 */
export function raceAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
): Promise<{ readonly aborted: false; readonly value: T } | { readonly aborted: true }> {
  if (signal === undefined) return promise.then((value) => ({ aborted: false, value }));
  return new Promise((resolve, reject) => {
    const unwatch = watchAbort(signal, () => resolve({ aborted: true }));
    promise.then(
      (value) => {
        unwatch();
        resolve({ aborted: false, value });
      },
      (error: unknown) => {
        unwatch();
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/**
 * Sleep unless a signal aborts first.
 * @param ms how long.
 * @param signal optional.
 * @returns true when the signal aborted the sleep.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    let unwatch = (): void => {};
    const timer = setTimeout(() => {
      unwatch();
      resolve(false);
    }, ms);
    if (signal !== undefined) {
      unwatch = watchAbort(signal, () => {
        clearTimeout(timer);
        resolve(true);
      });
    }
  });
}
