/**
 * Serialise a JSON value with object keys sorted at every depth, so equal values give equal text.
 * `undefined` members are dropped as `JSON.stringify` drops them.
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

/**
 * True when the human's edited arguments differ from the original ones (compared as canonical
 * JSON, so key order and whitespace do not count).
 * @param original the arguments the agent wrote.
 * @param edited the arguments read back from the note.
 */
export function isModified(
  original: Readonly<Record<string, unknown>>,
  edited: Readonly<Record<string, unknown>>,
): boolean {
  return canonicalJson(original) !== canonicalJson(edited);
}
