import { ToolError } from '../protocol/errors.ts';
import type { Tool, ToolContext } from '../protocol/types.ts';
import { watchAbort } from './abort.ts';
import { CallProcesses } from './exec.ts';

/** How one attempt ended. */
export type AttemptOutcome =
  | { readonly kind: 'ok'; readonly value: unknown }
  | { readonly kind: 'thrown'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'interrupted'; readonly started: boolean };

/** Inputs of {@link startAttempt}. */
export interface AttemptInput {
  readonly tool: Tool;
  readonly args: Record<string, unknown>;
  readonly timeoutMs: number;
  /** Shutdown signal of the caller, if any. */
  readonly signal: AbortSignal | undefined;
  /** Build the handler's context around the attempt's own signal and processes. */
  readonly makeContext: (signal: AbortSignal, processes: CallProcesses) => ToolContext;
  /** Called right before the handler starts. */
  readonly onStart: () => void;
}

/** A running attempt. */
export interface Attempt {
  /** How it ended for the caller: at the deadline or abort at once, whether or not the handler stopped. */
  readonly outcome: Promise<AttemptOutcome>;
  /**
   * Resolves once the handler has really settled and every process it started is gone: until
   * then the call still holds its concurrency slot.
   */
  readonly settled: Promise<void>;
  /** Process groups of the attempt still alive. */
  readonly processes: CallProcesses;
}

/**
 * Start a handler once with a deadline: at the deadline, or when the caller's signal aborts, the
 * handler's signal is aborted (which kills its process groups) and the outcome is given at once;
 * `settled` follows when the handler actually returns and its children are gone. Never rejects.
 * @param input the tool, arguments, timeout and signals.
 */
export function startAttempt(input: AttemptInput): Attempt {
  const controller = new AbortController();
  const processes = new CallProcesses(controller.signal);
  let handlerDone: Promise<unknown> = Promise.resolve();
  const outcome = new Promise<AttemptOutcome>((resolve) => {
    const outer = input.signal;
    if (outer?.aborted === true) {
      resolve({ kind: 'interrupted', started: false });
      return;
    }
    let settled = false;
    let unwatch = (): void => {};
    const finish = (result: AttemptOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      unwatch();
      resolve(result);
    };
    const timer = setTimeout(() => {
      // Settle first, so a handler that rejects synchronously on abort cannot win the race.
      finish({ kind: 'timeout' });
      controller.abort(
        new ToolError('TIMEOUT', `${input.tool.name} timed out after ${input.timeoutMs} ms`),
      );
    }, input.timeoutMs);
    if (outer !== undefined) {
      unwatch = watchAbort(outer, () => {
        finish({ kind: 'interrupted', started: true });
        controller.abort(outer.reason);
      });
    }
    input.onStart();
    let returned: unknown;
    try {
      returned = input.tool.handler(input.args, input.makeContext(controller.signal, processes));
    } catch (error) {
      finish({ kind: 'thrown', error });
      return;
    }
    const promise = Promise.resolve(returned);
    handlerDone = promise;
    promise.then(
      (value) => finish({ kind: 'ok', value }),
      (error: unknown) => finish({ kind: 'thrown', error }),
    );
  });
  const settled = outcome.then(async () => {
    await handlerDone.then(
      () => undefined,
      () => undefined,
    );
    // Whatever the handler left running is killed: the slot is free only when it is gone.
    processes.killAll();
    await processes.idle();
  });
  return { outcome, settled, processes };
}
