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
  for (const error of errors) {
    const sentence = describeError(error, root, prefix);
    if (sentence !== null && !sentences.includes(sentence)) sentences.push(sentence);
  }
  return sentences;
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
    case 'required':
      return `${key} is missing the required key '${String(params['missingProperty'])}'`;
    default:
      return `${key} ${error.message ?? 'is invalid'} ${got}`;
  }
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
