/**
 * Serialise a JSON value with object keys sorted at every depth, so equal values give equal text
 * whatever their key order: the one definition behind derived call ids, cache keys, the ledger's
 * argument hashes and the comparison of a human's edited parameters. `undefined` members are
 * dropped as `JSON.stringify` drops them; a `__proto__` key stays data.
 * @param value any JSON-compatible value.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  // fromEntries defines own properties, so a `__proto__` key stays data and never a prototype.
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}
