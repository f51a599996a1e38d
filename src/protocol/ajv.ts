import type { Options } from 'ajv';
import { createRequire } from 'node:module';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type { Ajv2020 as Ajv2020Class, ValidateFunction } from 'ajv/dist/2020.js';
import type AddFormats from 'ajv-formats';
import { PrecompiledSet } from './precompiled.ts';
import type { PrecompiledValidators } from './precompiled.ts';

// Ajv is loaded on the first compile, not at start-up: loading it and making the instance (with
// its formats and draft-07's meta-schema) was a tenth of `vaultd run`'s start-up. The built-in
// tools' schemas need neither: the build wrote their validators (bench/README.md, item 30).
const require = createRequire(import.meta.url);
let instance: Ajv2020Class | undefined;

/** The file the build writes next to the bundle: the built-in tools' argument validators. */
export const TOOL_VALIDATORS_FILE = 'tool-validators.cjs';
const precompiled = new PrecompiledSet(TOOL_VALIDATORS_FILE, import.meta.url);

/**
 * Load the build's validators of the built-in tools' schemas (tests give another file).
 * @param file the module; the one next to the bundle by default.
 */
export function loadToolValidators(file?: string): PrecompiledValidators | null {
  return precompiled.load(file);
}

/**
 * The file the build writes next to the bundle: validators of the meta-schemas a tool's schema is
 * checked against (2020-12's and draft-07's), so that compiling a plugin's or an MCP server's
 * schema does not first compile the meta-schema (bench/README.md, item 35).
 */
export const META_VALIDATORS_FILE = 'meta-validators.cjs';
const metaPrecompiled = new PrecompiledSet(META_VALIDATORS_FILE, import.meta.url);

/** The meta-schemas the build precompiles, by the export's name. */
export const PRECOMPILED_META_SCHEMAS: Readonly<Record<string, string>> = {
  meta2020: 'https://json-schema.org/draft/2020-12/schema',
  metaDraft7: 'http://json-schema.org/draft-07/schema',
};
const META_EXPORTS = new Map(Object.entries(PRECOMPILED_META_SCHEMAS).map(([k, id]) => [id, k]));

/**
 * Load the build's meta-schema validators (tests give another file).
 * @param file the module; the one next to the bundle by default.
 */
export function loadMetaValidators(file?: string): PrecompiledValidators | null {
  const loaded = metaPrecompiled.load(file);
  // An instance made before checks schemas as it was made to; the next one follows the file.
  instance = undefined;
  return loaded;
}

/**
 * The one Ajv instance shared by every tool: JSON Schema 2020-12 (schemas that declare draft-07,
 * as many MCP servers send, are accepted too), all errors reported, defaults applied, no type
 * coercion, unknown keywords and formats tolerated, `verbose` so messages can quote the
 * offending value. Made on first use.
 */
export function sharedAjv(): Ajv2020Class {
  // With the build's meta-schema validators, compileSchema checks each schema with them and Ajv
  // does not (nor the draft-07 meta-schema it is given): the same check, without compiling the
  // meta-schemas first.
  instance ??= makeToolAjv(
    metaPrecompiled.named('meta2020') === undefined ? {} : { validateSchema: false },
  );
  return instance;
}

/**
 * A new instance configured as the shared one.
 * @param extra options added for the build's standalone code (`code.source`).
 */
export function makeToolAjv(extra: Options = {}): Ajv2020Class {
  const { Ajv2020 } = require('ajv/dist/2020.js') as typeof Ajv2020Module;
  // ajv-formats is CommonJS: `module.exports` is the plugin, and so is its `default`.
  const addFormats = (require('ajv-formats') as typeof AddFormats).default;
  const ajv = new Ajv2020({
    allErrors: true,
    useDefaults: true,
    coerceTypes: false,
    strict: false,
    verbose: true,
    validateFormats: true,
    ...extra,
  });
  addFormats(ajv);
  ajv.addMetaSchema(require('ajv/dist/refs/json-schema-draft-07.json') as object);
  return ajv;
}

/**
 * Compile a schema with the shared instance, reading draft-07's array form of `items` (and
 * `additionalItems`) as 2020-12's `prefixItems` (and `items`) first; a built-in tool's schema
 * takes the validator the build made for it.
 * @param schema a JSON Schema; not modified.
 * @throws Error when Ajv cannot compile it.
 */
export function compileSchema(schema: object): ValidateFunction {
  const upgraded = upgradeDraft7(schema) as object;
  const built = precompiled.find(upgraded);
  if (built !== undefined) return built;
  const ajv = sharedAjv();
  if (ajv.opts.validateSchema === false) checkSchema(ajv, upgraded);
  return ajv.compile(upgraded);
}

/**
 * Check a schema against the meta-schema it names (2020-12 when it names none), as Ajv does
 * before it compiles, for a compile by an instance that does not check (`validateSchema: false`).
 * @param schema a JSON Schema, draft-07's tuple keywords already upgraded.
 * @throws Error saying what is invalid.
 */
export function checkSchemaMeta(schema: object): void {
  checkSchema(sharedAjv(), schema);
}

// What Ajv's own check does before it compiles (`validateSchema(schema, true)`), with the
// build's validator of the meta-schema the schema names (2020-12 when it names none); a schema
// that names any other is left to Ajv, which checks it, or throws for a meta-schema it lacks.
function checkSchema(ajv: Ajv2020Class, schema: object): void {
  const declared = (schema as { $schema?: unknown }).$schema;
  const id = declared === undefined ? PRECOMPILED_META_SCHEMAS['meta2020'] : declared;
  const name = typeof id === 'string' ? META_EXPORTS.get(id.replace(/#$/, '')) : undefined;
  const validate = name === undefined ? undefined : metaPrecompiled.named(name);
  if (validate === undefined) {
    ajv.validateSchema(schema, true);
    return;
  }
  if (!validate(schema)) throw new Error(`schema is invalid: ${ajv.errorsText(validate.errors)}`);
}

/**
 * A copy of a schema with draft-07's tuple keywords in their 2020-12 spelling.
 * @param schema any JSON Schema (or part of one).
 */
export function upgradeDraft7(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(upgradeDraft7);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  const node = schema as Record<string, unknown>;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'items' && Array.isArray(value)) out['prefixItems'] = value.map(upgradeDraft7);
    else if (key === 'additionalItems' && Array.isArray(node['items']))
      out['items'] = upgradeDraft7(value);
    else if (key === 'additionalItems') continue;
    else out[key] = upgradeDraft7(value);
  }
  return out;
}

export type { ValidateFunction };
