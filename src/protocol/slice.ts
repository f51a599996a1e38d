import { performance } from 'node:perf_hooks';

/**
 * The longest stretch of work the pipeline does on the main thread before it lets the event loop
 * run (other notes, timers, HTTP requests, the watcher). SPEC section 6: no task blocks the main
 * thread for more than 50 ms; a note of 10,000 calls is one long chain of promises that resolve
 * at once (in-process tools answer in microseconds), which never gives the loop a turn on its own.
 */
export const SLICE_MS = 8;

let sliceStart = -1;

function endSlice(): void {
  sliceStart = -1;
}

/**
 * Whether the work since the event loop last ran its immediates has lasted `SLICE_MS` or more.
 * The first question in a turn of the loop starts the clock and arms an immediate that stops it:
 * that immediate runs only once the loop turns, so a chain of microtasks, however long, is one
 * slice.
 */
export function sliceSpent(): boolean {
  return sliceElapsed() >= SLICE_MS;
}

/**
 * How long the work since the event loop last ran its immediates has lasted, in ms, with the
 * clock started as {@link sliceSpent} starts it (0 for the first question in a turn).
 */
export function sliceElapsed(): number {
  const now = performance.now();
  if (sliceStart < 0) {
    sliceStart = now;
    setImmediate(endSlice);
    return 0;
  }
  return now - sliceStart;
}

/**
 * Let the event loop run when the current slice is spent; otherwise nothing (the caller's `await`
 * then costs one microtask). Call it between the items of a loop that may be long.
 */
export function yieldWhenSpent(): Promise<void> | undefined {
  if (!sliceSpent()) return undefined;
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * {@link yieldWhenSpent} at every 256th item of a loop over items that each take well under a
 * microsecond, where asking the clock at every item would cost more than the item.
 * @param index the item's index, from 0.
 */
export function yieldAtItem(index: number): Promise<void> | undefined {
  return (index & 255) === 255 ? yieldWhenSpent() : undefined;
}
