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
 * calls spend a fifth of its parse on them, besides the garbage (bench/README.md item 20);
 * test/protocol/canonical-json.test.ts compares the two on random values. A value holding an
 * object with a `toJSON` (never one read from JSON) takes the copy's way, so it stays as it was.
 * @param value any JSON-compatible value.
 */
export function canonicalJson(value: unknown): string {
  // A value whose keys are already in that order at every depth (most calls' arguments: one key,
  // or keys an agent wrote in order) is written by JSON.stringify itself: one flat string, no
  // pieces. Writing it piece by piece was a third of everything a note of 12,000 calls allocated
  // (bench/README.md, item 54).
  if (inCanonicalOrder(value)) return JSON.stringify(value) ?? 'null';
  // Pieces joined once: one flat string, where `+=` would leave a tree of them to flatten when
  // the text is hashed or used as a key.
  const out: string[] = [];
  try {
    write(value, out);
  } catch (error) {
    if (error !== HAS_TO_JSON) throw error;
    return JSON.stringify(sortKeys(value)) ?? 'null';
  }
  return out.join('');
}

/**
 * Whether `JSON.stringify(value)` is already the canonical text: every object met is a plain
 * one (its prototype `Object.prototype` or null) without a `toJSON`, its own keys listed as the
 * sorted copy would list them (array indices first, ascending, then the others by UTF-16 code
 * units), and no function anywhere (JSON.stringify calls a function member's `toJSON`, which the
 * copy leaves out). Anything else (a class instance, a boxed primitive, keys out of order)
 * answers false and is written piece by piece. Reads each key once and allocates nothing.
 */
function inCanonicalOrder(value: unknown): boolean {
  if (typeof value === 'function') return false;
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype || 'toJSON' in value) return false;
    for (let i = 0; i < value.length; i++) {
      if (!inCanonicalOrder(value[i])) return false;
    }
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if ((proto !== Object.prototype && proto !== null) || 'toJSON' in value) return false;
  const record = value as Record<string, unknown>;
  let lastIndex = -1;
  let lastName: string | undefined;
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    if (isArrayIndex(key)) {
      const index = Number(key);
      if (lastName !== undefined || index <= lastIndex) return false;
      lastIndex = index;
    } else {
      if (lastName !== undefined && !(lastName < key)) return false;
      lastName = key;
    }
    if (!inCanonicalOrder(record[key])) return false;
  }
  return true;
}

/** Thrown by `write` at an object with a `toJSON`: the whole value then takes the copy's way. */
const HAS_TO_JSON = Symbol('toJSON');

/** Whether `JSON.stringify` leaves the value out of an object (prints null in an array). */
function isLeftOut(value: unknown): boolean {
  const type = typeof value;
  return type === 'undefined' || type === 'function' || type === 'symbol';
}

function write(value: unknown, out: string[]): void {
  switch (typeof value) {
    case 'string':
      out.push(JSON.stringify(value));
      return;
    case 'number':
      out.push(Number.isFinite(value) ? String(value) : 'null');
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'object':
      break;
    default:
      // undefined, a function or a symbol: null, as JSON.stringify writes them alone and in an
      // array (an object leaves such members out before they get here); a bigint throws as
      // JSON.stringify throws.
      out.push(JSON.stringify(value) ?? 'null');
      return;
  }
  if (value === null) {
    out.push('null');
    return;
  }
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(',');
      write(value[i], out);
    }
    out.push(']');
    return;
  }
  if ('toJSON' in value) throw HAS_TO_JSON;
  const record = value as Record<string, unknown>;
  out.push('{');
  let first = true;
  for (const key of sortedKeys(record)) {
    const member = record[key];
    if (isLeftOut(member)) continue;
    out.push(first ? `${JSON.stringify(key)}:` : `,${JSON.stringify(key)}:`);
    first = false;
    write(member, out);
  }
  out.push('}');
}

/** Own enumerable keys in the order an object built from them sorted would list them. */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  const count = keys.length;
  if (count < 2) return keys;
  // An ordinary object lists its array-index keys first, in ascending order, as the sorted copy
  // lists them; the other keys, after them, are sorted in place. A few keys are sorted by
  // insertion: Array.prototype.sort allocated about 400 bytes per call, a fifth of everything a
  // note of calls allocated (bench/README.md item 36).
  let from = 0;
  while (from < count && isArrayIndex(keys[from] as string)) from++;
  for (let i = from; i < count; i++) {
    if (isArrayIndex(keys[i] as string)) return sortedKeysOf(keys);
  }
  for (let i = 1; i < from; i++) {
    if (Number(keys[i - 1]) >= Number(keys[i])) return sortedKeysOf(keys);
  }
  if (count - from > 16) {
    const names = keys.slice(from).sort();
    for (let i = 0; i < names.length; i++) keys[from + i] = names[i] as string;
    return keys;
  }
  for (let i = from + 1; i < count; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    while (j >= from && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

// Keys listed in any other order (an exotic object's): array indices first, ascending, then the
// rest sorted by UTF-16 code units.
function sortedKeysOf(keys: readonly string[]): string[] {
  const indices: string[] = [];
  const names: string[] = [];
  for (const key of keys) (isArrayIndex(key) ? indices : names).push(key);
  names.sort();
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
