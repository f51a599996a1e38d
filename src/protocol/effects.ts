import type { SafetyLevel, Tool } from './types.ts';

/** What a call may do, decided once per call from its tool and normalised arguments. */
export interface Effects {
  readonly safety: SafetyLevel;
  /** The call only reads: no ledger intent, results cached, recoverable failures retried. */
  readonly readOnly: boolean;
  /** Running it twice has the effect of running it once. */
  readonly idempotent: boolean;
}

/**
 * The effects of one call: the one place that says whether a call has side effects, read by the
 * gate, the ledger, the cache and the retry rule.
 * @param tool the declared tool.
 * @param _args the call's normalised arguments.
 */
export function effectsOf(tool: Tool, _args: Readonly<Record<string, unknown>>): Effects {
  return { safety: tool.safety, readOnly: tool.readOnly, idempotent: tool.idempotent };
}
