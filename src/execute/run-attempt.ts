import { ToolError } from '../protocol/errors.ts';
import type { Tool, ToolContext } from '../protocol/types.ts';
import { watchAbort } from './abort.ts';

/** How one attempt ended. */
export type AttemptOutcome =
  | { readonly kind: 'ok'; readonly value: unknown }
  | { readonly kind: 'thrown'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'interrupted'; readonly started: boolean };

/** Inputs of {@link runAttempt}. */
export interface AttemptInput {
  readonly tool: Tool;
  readonly args: Record<string, unknown>;
  readonly timeoutMs: number;
  /** Shutdown signal of the caller, if any. */
  readonly signal: AbortSignal | undefined;
  /** Build the handler's context around the attempt's own signal. */
  readonly makeContext: (signal: AbortSignal) => ToolContext;
  /** Called right before the handler starts. */
  readonly onStart: () => void;
}

/**
 * Run a handler once with a deadline: at the deadline, or when the caller's signal aborts, the
 * handler's signal is aborted and the attempt ends at once, whether or not the handler stops.
 * Never rejects.
 * @param input the tool, arguments, timeout and signals.
 */
export function runAttempt(input: AttemptInput): Promise<AttemptOutcome> {
  return new Promise((resolve) => {
    const outer = input.signal;
    if (outer?.aborted === true) {
      resolve({ kind: 'interrupted', started: false });
      return;
    }
    const controller = new AbortController();
    let settled = false;
    let unwatch = (): void => {};
    const finish = (outcome: AttemptOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      unwatch();
      resolve(outcome);
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
      returned = input.tool.handler(input.args, input.makeContext(controller.signal));
    } catch (error) {
      finish({ kind: 'thrown', error });
      return;
    }
    Promise.resolve(returned).then(
      (value) => finish({ kind: 'ok', value }),
      (error: unknown) => finish({ kind: 'thrown', error }),
    );
  });
}
