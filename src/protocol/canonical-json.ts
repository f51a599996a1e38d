/**
 * Serialise a JSON value with object keys sorted at every depth, so equal values give equal text
 * whatever their key order: the one definition behind derived call ids, cache keys, the ledger's
 * argument hashes and the comparison of a human's edited parameters. `undefined` members are
 * dropped as `JSON.stringify` drops them; a `__proto__` key stays data.
 *
 * The text is, byte for byte, `JSON.stringify` of a copy whose objects were rebuilt with their keys
 * in sorted order (`Object.fromEntries` of the sorted entries): keys that are array indices come
 * first in ascending numeric order, as every object orders them, then the other keys by UTF-16
 * code units. It is written directly rather than through such copies, which made a note of 12,000
 * calls spend a third of its parse on them and the garbage they left (bench/README.md);
 * test/protocol/canonical-json.test.ts compares the two on random values. An object with a
 * `toJSON` anywhere on it takes the copy's way, so that rare case stays exactly as it was.
 * @param value any JSON-compatible value.
 */
export function canonicalJson(value: unknown): string {
  return write(value) ?? 'null';
}

/** The value's text, or undefined where `JSON.stringify` leaves a member out. */
function write(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    default:
      // undefined, functions and symbols are left out; a bigint throws as JSON.stringify throws.
      return JSON.stringify(value);
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out += write(value[i]) ?? 'null';
    }
    return `${out}]`;
  }
  if ('toJSON' in value) return JSON.stringify(sortKeys(value));
  const record = value as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (const key of sortedKeys(record)) {
    const member = write(record[key]);
    if (member === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(key)}:${member}`;
    first = false;
  }
  return `${out}}`;
}

/** Own enumerable keys in the order an object built from them sorted would list them. */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  if (keys.length < 2) return keys;
  const indices: string[] = [];
  const names: string[] = [];
  for (const key of keys) (isArrayIndex(key) ? indices : names).push(key);
  names.sort();
  if (indices.length === 0) return names;
  indices.sort((a, b) => Number(a) - Number(b));
  return indices.concat(names);
}

/** Whether `key` is an array index (`0` to 2^32 − 2, written canonically), which objects list first. */
function isArrayIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  if (!(c >= 48 && c <= 57)) return false; // also the empty key (NaN)
  if (key.length > 10 || (c === 48 && key.length > 1)) return false;
  for (let i = 1; i < key.length; i++) {
    const d = key.charCodeAt(i);
    if (d < 48 || d > 57) return false;
  }
  return Number(key) < 4_294_967_295;
}

/** The copy with sorted keys that {@link canonicalJson} serialises (its definition). */
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
