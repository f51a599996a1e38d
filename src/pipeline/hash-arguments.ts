import { createHash } from 'node:crypto';
import { canonicalJson } from '../execute/canonical-json.ts';

/**
 * A short stable hash of a call's arguments, for the ledger.
 * @param args the call's arguments.
 */
export function hashArguments(args: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex').slice(0, 16);
}
