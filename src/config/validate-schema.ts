import type * as AjvModule from 'ajv';
import type { Ajv, Options, ValidateFunction } from 'ajv';
import type AddFormats from 'ajv-formats';
import { createRequire } from 'node:module';
import { PrecompiledSet } from '../protocol/precompiled.ts';
import type { PrecompiledValidators } from '../protocol/precompiled.ts';
import type { JsonSchema } from '../protocol/types.ts';
import { describeSchemaErrors } from './schema-errors.ts';
import type { SubstitutedConfig } from './substitute-env.ts';

/**
 * The Ajv options the config's schemas are compiled with, at start-up or ahead of time by the
 * build (`precompile.ts`): the same options, so the same errors and defaults either way.
 */
export const CONFIG_AJV_OPTIONS: Readonly<Options> = {
  allErrors: true,
  verbose: true,
  allowUnionTypes: true,
  useDefaults: true,
  strict: false,
  // The schemas are vaultd's and its packs': not checked against the meta-schema at every
  // start (compiling the meta-schema was a tenth of the start-up); a broken one still fails
  // to compile, and the tests compile every built-in one.
  validateSchema: false,
};

/** The file the build writes next to the bundle: the built-in config schemas' validators. */
export const CONFIG_VALIDATORS_FILE = 'config-validators.cjs';

const require = createRequire(import.meta.url);
let ajv: Ajv | undefined;
const compiled = new WeakMap<JsonSchema, ValidateFunction>();
// The validators the build made for the built-in config schemas (dist/config-validators.cjs);
// none when vaultd runs from its sources. Compiling the config's schemas with Ajv was a sixth of
// `vaultd run`'s start-up (bench/README.md, item 30).
const precompiled = new PrecompiledSet(CONFIG_VALIDATORS_FILE, import.meta.url);

/**
 * Load the build's validators of the config schemas (tests give another file).
 * @param file the module; the one next to the bundle by default.
 */
export function loadPrecompiled(file?: string): PrecompiledValidators | null {
  return precompiled.load(file);
}

/**
 * The validator of a config schema: the build's, when it made one for this schema, else compiled
 * with Ajv; kept per schema object.
 * @param schema a JSON Schema.
 */
export function configValidator(schema: JsonSchema): ValidateFunction {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    validate = precompiled.find(schema) ?? compileWithAjv(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

/**
 * Compile a schema of the config with Ajv, loaded on first use.
 * @param schema a JSON Schema.
 */
export function compileWithAjv(schema: JsonSchema): ValidateFunction {
  ajv ??= makeConfigAjv();
  return ajv.compile(schema);
}

/**
 * The Ajv instance the config's schemas are compiled with (draft-07, the options above, formats).
 * @param extra options added for the build's standalone code (`code.source`).
 */
export function makeConfigAjv(extra: Options = {}): Ajv {
  const { Ajv: AjvClass } = require('ajv') as typeof AjvModule;
  // ajv-formats is CommonJS: its `module.exports` is the plugin, and so is its `default`.
  const addFormats = (require('ajv-formats') as typeof AddFormats).default;
  return addFormats(new AjvClass({ ...CONFIG_AJV_OPTIONS, ...extra }));
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
  const validate = configValidator(schema);
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
