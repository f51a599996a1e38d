import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { JsonSchema } from '../protocol/types.ts';
import { describeSchemaErrors } from './schema-errors.ts';
import type { SubstitutedConfig } from './substitute-env.ts';

// ajv-formats is CommonJS: its ESM default import is `module.exports`, whose `default` is the plugin.
type FormatsPlugin = (ajv: Ajv) => Ajv;
const formatsModule = addFormatsModule as unknown as FormatsPlugin & { default?: FormatsPlugin };
const addFormats: FormatsPlugin = formatsModule.default ?? formatsModule;

let ajv: Ajv | undefined;
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

function compile(schema: JsonSchema): ValidateFunction {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    ajv ??= addFormats(
      new Ajv({
        allErrors: true,
        verbose: true,
        allowUnionTypes: true,
        useDefaults: true,
        strict: false,
        // The schemas are vaultd's and its packs': not checked against the meta-schema at every
        // start (compiling the meta-schema was a tenth of the start-up); a broken one still fails
        // to compile, and the tests compile every built-in one.
        validateSchema: false,
      }),
    );
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

/**
 * Validate `data` in place against `schema` (compiled once per schema object), applying the
 * schema's defaults. A string that was exactly one `${VAR}` reference is read as a number,
 * boolean or null when the schema wants one (`port: ${SMTP_PORT}`).
 * @param schema JSON Schema; an invalid schema is a programmer error and throws.
 * @param data the section to check; modified by defaults and coercion.
 * @param prefix key path of `data` in the whole config, for messages.
 * @param references JSON pointers (from the config root) of strings that were exactly one
 *   reference, and of strings whose references failed (their errors are already reported).
 * @returns one sentence per problem; empty when valid.
 */
export function validateSection(
  schema: JsonSchema,
  data: unknown,
  prefix: readonly string[],
  references: Pick<SubstitutedConfig, 'wholeReferences' | 'unresolved'>,
): string[] {
  const validate = compile(schema);
  if (validate(data)) return [];
  const base = prefix.map((s) => `/${s.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
  let coerced = false;
  for (const error of validate.errors ?? []) {
    if (error.keyword !== 'type' || !references.wholeReferences.has(base + error.instancePath))
      continue;
    const types = ([] as unknown[]).concat(error.params['type']).map(String);
    const value = readScalar(error.data, types);
    if (value !== undefined && setAtPointer(data, error.instancePath, value)) coerced = true;
  }
  if (coerced && validate(data)) return [];
  const errors = (validate.errors ?? []).filter(
    (error) => !references.unresolved.has(base + error.instancePath),
  );
  return describeSchemaErrors(errors, data, prefix);
}

function readScalar(value: unknown, types: readonly string[]): unknown {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(text)) {
    return Number(text);
  }
  if (types.includes('boolean') && (text === 'true' || text === 'false')) return text === 'true';
  if (types.includes('null') && (text === '' || text === 'null')) return null;
  return undefined;
}

function setAtPointer(root: unknown, pointer: string, value: unknown): boolean {
  const keys = pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  const last = keys.pop();
  let node = root;
  for (const key of keys) {
    if (node === null || typeof node !== 'object') return false;
    node = (node as Record<string, unknown>)[key];
  }
  if (last === undefined || node === null || typeof node !== 'object') return false;
  (node as Record<string, unknown>)[last] = value;
  return true;
}
