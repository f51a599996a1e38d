import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted at every depth, so equal values give equal text.
 * @param value any JSON value.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/**
 * A short stable hash of a call's arguments, for the ledger.
 * @param args the call's arguments.
 */
export function hashArguments(args: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex').slice(0, 16);
}
