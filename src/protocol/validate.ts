import type { ErrorObject } from 'ajv';
import { getValidator } from './define-tool.ts';
import { ToolError } from './errors.ts';
import type { JsonSchema, Tool } from './types.ts';

/** Outcome of {@link validateArguments}. */
export type ValidationResult =
  | { readonly ok: true; readonly args: Record<string, unknown> }
  | { readonly ok: false; readonly message: string };

/**
 * Check call arguments against a tool's schema, on a copy with the schema's defaults applied, then
 * bring them to the tool's normal form (`normalize`), which is checked against the schema again.
 * @param tool a declared tool.
 * @param args the call's arguments as written; never modified.
 * @param config the tool's pack config, for its `normalize`; default `{}`.
 * @returns the normalised arguments, or one message naming each bad parameter and what it expects.
 */
export function validateArguments(
  tool: Tool<unknown>,
  args: unknown,
  config: Readonly<Record<string, unknown>> = {},
): ValidationResult {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return { ok: false, message: `parameters must be a JSON object, got ${describeValue(args)}` };
  }
  let copy: Record<string, unknown>;
  try {
    copy = structuredClone(args) as Record<string, unknown>;
  } catch {
    return { ok: false, message: 'parameters must be plain JSON data' };
  }
  const validate = getValidator(tool);
  if (!validate(copy)) return { ok: false, message: describeErrors(tool, validate.errors ?? []) };
  if (tool.normalize === undefined) return { ok: true, args: copy };
  let normal: unknown;
  try {
    normal = tool.normalize(copy, config);
  } catch (error) {
    if (error instanceof ToolError && error.code === 'INVALID_PARAMS')
      return { ok: false, message: error.message };
    throw error;
  }
  if (!validate(normal)) return { ok: false, message: describeErrors(tool, validate.errors ?? []) };
  return { ok: true, args: normal as Record<string, unknown> };
}

function describeErrors(tool: Tool<unknown>, errors: readonly ErrorObject[]): string {
  // An anyOf/oneOf failure also reports every branch's failure; keep only the summary.
  const combinators = errors
    .filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .map((e) => `${e.schemaPath}/`);
  const kept = errors.filter((e) => !combinators.some((prefix) => e.schemaPath.startsWith(prefix)));

  const unknown: string[] = [];
  const phrases: string[] = [];
  for (const error of kept) {
    // Ajv follows the failure of a key with a summary ("property name must be valid"): the key's
    // own error already says what is wrong with it.
    if (error.keyword === 'propertyNames') continue;
    if (error.keyword === 'additionalProperties' && error.instancePath === '') {
      unknown.push(String(error.params['additionalProperty']));
      continue;
    }
    phrases.push(describeError(tool, error));
  }
  if (unknown.length > 0) {
    const names = unknown.map((n) => `'${n}'`).join(', ');
    const expected = Object.keys(tool.parameters);
    phrases.push(
      `unknown parameter${unknown.length > 1 ? 's' : ''} ${names}; ` +
        (expected.length > 0
          ? `expected one of: ${expected.join(', ')}`
          : 'this tool takes no parameters'),
    );
  }
  return [...new Set(phrases)].join('; ');
}

function describeError(tool: Tool<unknown>, error: ErrorObject): string {
  const path = formatPath(error.instancePath);
  const subject =
    error.propertyName === undefined
      ? `parameter '${path}'`
      : `key '${error.propertyName}' of parameter '${path}'`;
  const schema = (error.parentSchema ?? {}) as JsonSchema;
  const got = `got ${describeValue(error.data)}`;
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required': {
      const missing = String(p['missingProperty']);
      if (path === '') {
        const type = describeTypeShort(tool.parameters[missing]);
        return `missing required parameter '${missing}'${type === '' ? '' : ` (${type})`}`;
      }
      return `${subject} is missing required property '${missing}'`;
    }
    case 'additionalProperties':
      return `${subject} has unknown property '${String(p['additionalProperty'])}'`;
    case 'type':
      return `${subject} must be ${describeType(p['type'])}, ${got}`;
    case 'maximum':
    case 'minimum':
    case 'exclusiveMaximum':
    case 'exclusiveMinimum': {
      const sign = { maximum: '≤', minimum: '≥', exclusiveMaximum: '<', exclusiveMinimum: '>' }[
        error.keyword
      ];
      return `${subject} must be ${describeType(schema['type'] ?? 'number')} ${sign} ${String(p['limit'])}, ${got}`;
    }
    case 'multipleOf':
      return `${subject} must be a multiple of ${String(p['multipleOf'])}, ${got}`;
    case 'minLength':
    case 'maxLength': {
      const bound = error.keyword === 'minLength' ? 'at least' : 'at most';
      const length = typeof error.data === 'string' ? ` (length ${error.data.length})` : '';
      return `${subject} must be a string of ${bound} ${plural(p['limit'], 'character')}, ${got}${length}`;
    }
    case 'minItems':
    case 'maxItems': {
      const bound = error.keyword === 'minItems' ? 'at least' : 'at most';
      const count = Array.isArray(error.data) ? error.data.length : 0;
      return `${subject} must be an array of ${bound} ${plural(p['limit'], 'item')}, got ${count}`;
    }
    case 'minProperties':
    case 'maxProperties': {
      const bound = error.keyword === 'minProperties' ? 'at least' : 'at most';
      return `${subject} must be an object with ${bound} ${plural(p['limit'], 'property', 'properties')}`;
    }
    case 'uniqueItems':
      return `${subject} must not contain duplicate items (items ${String(p['j'])} and ${String(p['i'])} are equal)`;
    case 'enum': {
      const allowed = (p['allowedValues'] as unknown[] | undefined) ?? [];
      return `${subject} must be one of: ${allowed.map((v) => JSON.stringify(v)).join(', ')} (${got})`;
    }
    case 'const':
      return `${subject} must be ${JSON.stringify(p['allowedValue'])}, ${got}`;
    case 'pattern':
      return `${subject} must match the pattern /${String(p['pattern'])}/, ${got}`;
    case 'format':
      return `${subject} must be a valid ${String(p['format'])}, ${got}`;
    case 'anyOf':
      return `${subject} must match at least one of the allowed forms, ${got}`;
    case 'oneOf':
      return `${subject} must match exactly one of the allowed forms, ${got}`;
    default:
      return `${subject} ${error.message ?? 'is invalid'}, ${got}`;
  }
}

/** `/filters/0/name` → `filters[0].name`, from an Ajv instance path (a JSON pointer). */
function formatPath(pointer: string): string {
  if (pointer === '') return '';
  let out = '';
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    out += /^\d+$/.test(segment) ? `[${segment}]` : out === '' ? segment : `.${segment}`;
  }
  return out;
}

function describeType(type: unknown): string {
  const types = Array.isArray(type) ? type : String(type).split(',');
  const named = types.map((t) => {
    const name = String(t);
    return /^[aeiou]/.test(name) ? `an ${name}` : name === 'null' ? 'null' : `a ${name}`;
  });
  return named.join(' or ');
}

function describeTypeShort(schema: JsonSchema | undefined): string {
  const type = schema?.['type'];
  if (type === undefined) return '';
  return Array.isArray(type) ? type.join(' or ') : String(type);
}

/** A short rendering of a value for a message: JSON for scalars, the kind for containers. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value))
    return `an array of ${value.length} item${value.length === 1 ? '' : 's'}`;
  if (typeof value === 'object' && value !== null) return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function plural(count: unknown, one: string, many = `${one}s`): string {
  return `${String(count)} ${count === 1 ? one : many}`;
}
