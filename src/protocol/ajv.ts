import { createRequire } from 'node:module';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; under nodenext its default import is the module object.
const addFormats = addFormatsModule.default;
const require = createRequire(import.meta.url);

/**
 * The one Ajv instance shared by every tool and the config: JSON Schema 2020-12 (schemas that
 * declare draft-07, as many MCP servers send, are accepted too), all errors reported, defaults
 * applied, no type coercion, unknown keywords and formats tolerated, `verbose` so messages can
 * quote the offending value.
 */
export const ajv: Ajv2020 = new Ajv2020({
  allErrors: true,
  useDefaults: true,
  coerceTypes: false,
  strict: false,
  verbose: true,
  validateFormats: true,
});
addFormats(ajv);
ajv.addMetaSchema(require('ajv/dist/refs/json-schema-draft-07.json') as object);

/**
 * Compile a schema with the shared instance, reading draft-07's array form of `items` (and
 * `additionalItems`) as 2020-12's `prefixItems` (and `items`) first.
 * @param schema a JSON Schema; not modified.
 * @throws Error when Ajv cannot compile it.
 */
export function compileSchema(schema: object): ValidateFunction {
  return ajv.compile(upgradeDraft7(schema) as object);
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
