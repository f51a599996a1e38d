import { editDistance } from '../protocol/close-names.ts';
import type { ErrorObject } from 'ajv';
import { formatKeyPath, quoteValue } from './config-error.ts';
import { DURATION_PATTERN } from './duration.ts';

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'a mapping of keys to values',
  array: 'a list',
  null: 'null',
};

/**
 * Turn Ajv errors (compiled with `allErrors` and `verbose`) into sentences that name the key path
 * and quote the bad value, e.g. `config key 'folders.done' must be a string (got 42)`.
 * @param errors the validator's errors.
 * @param root the validated data, used to tell list indexes from keys.
 * @param prefix key path of `root` inside the whole config (e.g. `['tools', 'search_web']`).
 */
export function describeSchemaErrors(
  errors: readonly ErrorObject[],
  root: unknown,
  prefix: readonly string[] = [],
): string[] {
  const sentences: string[] = [];
  const conditions = conditionsOf(errors, root, prefix);
  // A oneOf/anyOf of `required` alternatives is said once (`needs one of the keys …`), not as a
  // missing key per alternative.
  const suppressed = new Set<ErrorObject>();
  for (const error of errors) {
    if (alternativeKeysOf(error) === undefined) continue;
    const branches = `${error.schemaPath}/`;
    for (const e of errors) if (e.schemaPath.startsWith(branches)) suppressed.add(e);
  }
  for (const error of errors) {
    // An `if` failure only says that its `then` (or `else`) failed; the errors inside that
    // branch say what is wrong, and are told the condition below.
    if (error.keyword === 'if' && innerErrorsOf(error, errors).length > 0) continue;
    if (suppressed.has(error)) continue;
    let sentence = describeError(error, root, prefix);
    const condition = conditions.get(error);
    if (sentence !== null && condition !== undefined) sentence += ` (${condition})`;
    if (sentence !== null && !sentences.includes(sentence)) sentences.push(sentence);
  }
  return sentences;
}

/** The keys of a oneOf/anyOf error whose alternatives each only require one key, else undefined. */
function alternativeKeysOf(error: ErrorObject): string[] | undefined {
  if (error.keyword !== 'oneOf' && error.keyword !== 'anyOf') return undefined;
  const branches = (error.parentSchema as Record<string, unknown> | undefined)?.[error.keyword];
  if (!Array.isArray(branches)) return undefined;
  const keys: string[] = [];
  for (const branch of branches as unknown[]) {
    const required = (branch as { required?: unknown } | null)?.required;
    if (
      branch === null ||
      typeof branch !== 'object' ||
      Object.keys(branch).length !== 1 ||
      !Array.isArray(required) ||
      required.length !== 1
    )
      return undefined;
    keys.push(String(required[0]));
  }
  return keys;
}

/** The errors inside the failing branch (`then` or `else`) of an `if` error. */
function innerErrorsOf(error: ErrorObject, errors: readonly ErrorObject[]): ErrorObject[] {
  const branch = String((error.params as Record<string, unknown>)['failingKeyword'] ?? 'then');
  const prefix = `${error.schemaPath.slice(0, -'/if'.length)}/${branch}/`;
  return errors.filter((e) => e !== error && e.schemaPath.startsWith(prefix));
}

/**
 * For each error inside the failing branch of an `if`, the condition that made the branch apply,
 * when the `if` only compares keys with constants (`needed when 'tools.search_web.provider' is
 * 'searxng'`).
 */
function conditionsOf(
  errors: readonly ErrorObject[],
  root: unknown,
  prefix: readonly string[],
): Map<ErrorObject, string> {
  const conditions = new Map<ErrorObject, string>();
  for (const error of errors) {
    if (error.keyword !== 'if') continue;
    const segments = [...prefix, ...pointerToSegments(error.instancePath, root)];
    const branch = String((error.params as Record<string, unknown>)['failingKeyword'] ?? 'then');
    const text = describeCondition(
      (error.parentSchema as { if?: unknown } | undefined)?.if,
      segments,
      branch === 'else',
    );
    if (text === undefined) continue;
    for (const inner of innerErrorsOf(error, errors)) conditions.set(inner, text);
  }
  return conditions;
}

function describeCondition(
  schema: unknown,
  segments: readonly (string | number)[],
  negated: boolean,
): string | undefined {
  const properties = (schema as { properties?: unknown } | undefined)?.properties;
  if (properties === null || typeof properties !== 'object') return undefined;
  const parts: string[] = [];
  for (const [name, child] of Object.entries(properties as Record<string, unknown>)) {
    const where = `'${formatKeyPath([...segments, name])}'`;
    const rule = child as { const?: unknown; enum?: unknown } | null;
    if (rule !== null && typeof rule === 'object' && 'const' in rule) {
      parts.push(`${where} is ${quoteValue(rule.const)}`);
    } else if (rule !== null && typeof rule === 'object' && Array.isArray(rule.enum)) {
      parts.push(`${where} is one of ${rule.enum.map(quoteValue).join(', ')}`);
    } else return undefined;
  }
  if (parts.length === 0) return undefined;
  return `${negated ? 'needed unless' : 'needed when'} ${parts.join(' and ')}`;
}

function describeError(
  error: ErrorObject,
  root: unknown,
  prefix: readonly string[],
): string | null {
  const segments = [...prefix, ...pointerToSegments(error.instancePath, root)];
  const key = `config key '${formatKeyPath(segments)}'`;
  const got = `(got ${quoteValue(error.data)})`;
  const params = error.params as Record<string, unknown>;

  if (error.keyword === 'propertyNames') return null;
  if (error.propertyName !== undefined) {
    const where = formatKeyPath([...segments, error.propertyName]);
    const rule =
      error.keyword === 'pattern' ? `must match /${String(params['pattern'])}/` : error.message;
    return `config key '${where}' is not an allowed name: names here ${rule ?? 'are restricted'}`;
  }
  switch (error.keyword) {
    case 'additionalProperties': {
      const unknown = String(params['additionalProperty']);
      const known = propertiesOf(error.parentSchema);
      const hint = suggestKey(unknown, known, error.parentSchema, segments);
      const where = formatKeyPath([...segments, unknown]);
      const allowed = known.length > 0 ? `; allowed here: ${known.join(', ')}` : '';
      return hint === null
        ? `unknown config key '${where}'${allowed}`
        : `unknown config key '${where}' (did you mean '${hint}'?)`;
    }
    case 'type': {
      const types = ([] as unknown[]).concat(params['type']).map(String);
      const wanted = types.map((t) => TYPE_NAMES[t] ?? t).join(' or ');
      return `${key} must be ${wanted} ${got}`;
    }
    case 'minimum':
      return `${key} must be at least ${String(params['limit'])} ${got}`;
    case 'maximum':
      return `${key} must be at most ${String(params['limit'])} ${got}`;
    case 'minLength':
      return params['limit'] === 1
        ? `${key} must not be empty`
        : `${key} must be at least ${String(params['limit'])} characters ${got}`;
    case 'enum': {
      const allowed = (params['allowedValues'] as unknown[]).map(quoteValue).join(', ');
      return `${key} must be one of ${allowed} ${got}`;
    }
    case 'pattern':
      if (params['pattern'] === DURATION_PATTERN) {
        return `${key} must be a duration such as '7d', '12h', '30m', '45s' or '500ms' ${got}`;
      }
      return `${key} must match /${String(params['pattern'])}/ ${got}`;
    case 'oneOf':
    case 'anyOf': {
      const keys = alternativeKeysOf(error);
      if (keys === undefined) break;
      const list = keys.map((k) => `'${k}'`).join(', ');
      return Array.isArray(params['passingSchemas'])
        ? `${key} must have only one of the keys ${list}, not several`
        : `${key} needs one of the keys ${list}`;
    }
    case 'required':
      return `${key} is missing the required key '${String(params['missingProperty'])}'`;
    default:
      break;
  }
  return `${key} ${error.message ?? 'is invalid'} ${got}`;
}

function pointerToSegments(pointer: string, root: unknown): (string | number)[] {
  if (pointer === '') return [];
  const segments: (string | number)[] = [];
  let node = root;
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) {
      segments.push(Number(segment));
      node = node[Number(segment)];
    } else {
      segments.push(segment);
      node =
        node !== null && typeof node === 'object'
          ? (node as Record<string, unknown>)[segment]
          : undefined;
    }
  }
  return segments;
}

function propertiesOf(schema: unknown): string[] {
  if (schema === null || typeof schema !== 'object') return [];
  const properties = (schema as { properties?: unknown }).properties;
  return properties !== null && typeof properties === 'object' ? Object.keys(properties) : [];
}

/** A close spelling among the keys allowed here, or the same key one level down (`inbox` → `folders.inbox`). */
function suggestKey(
  unknown: string,
  known: readonly string[],
  schema: unknown,
  segments: readonly (string | number)[],
): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  const limit = Math.max(1, Math.min(3, Math.floor(unknown.length / 3)));
  for (const candidate of known) {
    const distance = editDistance(unknown.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best !== null) return formatKeyPath([...segments, best]);
  const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
  for (const [name, child] of Object.entries(properties)) {
    if (propertiesOf(child).includes(unknown)) return formatKeyPath([...segments, name, unknown]);
  }
  return null;
}
