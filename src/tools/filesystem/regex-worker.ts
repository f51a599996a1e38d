import { Worker } from 'node:worker_threads';

/** A line that matched: 1-based number and its text (cut to 300 characters). */
export interface LineMatch {
  readonly line: number;
  readonly text: string;
}

// Runs an agent's regular expression off the main thread: JavaScript regexes backtrack, and a
// pattern like (a+)+$ would otherwise stop the whole daemon; a worker can be terminated.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const re = new RegExp(workerData.source, workerData.flags);
parentPort.on('message', ({ text, max }) => {
  const out = [];
  const lines = text.split('\\n');
  for (let i = 0; i < lines.length && out.length < max; i++) {
    re.lastIndex = 0;
    if (re.test(lines[i])) out.push({ line: i + 1, text: lines[i].slice(0, 300) });
  }
  parentPort.postMessage(out);
});
`;

/** Matching lines of texts against one regular expression, in a worker, each within a deadline. */
export interface RegexMatcher {
  /**
   * The lines of `text` the expression matches, at most `max`.
   * @returns the matches, or null when the deadline passed first (the worker is then ended).
   */
  match(text: string, max: number, deadline: number): Promise<LineMatch[] | null>;
  close(): Promise<void>;
}

/**
 * Start a worker for one regular expression (already checked to compile).
 * @param source the expression.
 * @param flags its flags (`i` for case-insensitive).
 */
export function regexMatcher(source: string, flags: string): RegexMatcher {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { source, flags },
    resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
  });
  worker.unref();
  let ended = false;
  return {
    match(text, max, deadline) {
      if (ended) return Promise.resolve(null);
      return new Promise((resolve) => {
        const finish = (value: LineMatch[] | null): void => {
          clearTimeout(timer);
          worker.off('message', onMessage);
          worker.off('error', onError);
          resolve(value);
        };
        const onMessage = (value: LineMatch[]): void => finish(value);
        const onError = (): void => {
          ended = true;
          finish(null);
        };
        const timer = setTimeout(
          () => {
            ended = true;
            void worker.terminate();
            finish(null);
          },
          Math.max(0, deadline - Date.now()),
        );
        worker.on('message', onMessage);
        worker.on('error', onError);
        worker.postMessage({ text, max });
      });
    },
    async close() {
      ended = true;
      await worker.terminate();
    },
  };
}
