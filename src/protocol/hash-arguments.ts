import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';

/**
 * The hash of a call's arguments that policy, approval requests, authorizations and the ledger
 * compare: SHA-256 of their canonical JSON, 32 hex digits.
 * @param args the call's normalised arguments.
 */
export function hashArguments(args: Readonly<Record<string, unknown>>): string {
  return hash('sha256', canonicalJson(args), 'hex').slice(0, 32);
}
