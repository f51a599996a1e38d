import { createRequire } from 'node:module';
import type * as AjvModule from 'ajv';
import type AddFormats from 'ajv-formats';
import type { JsonSchema } from '../protocol/types.ts';
import { CONFIG_AJV_OPTIONS, schemaKey } from './validate-schema.ts';

const require = createRequire(import.meta.url);

/**
 * The source of a CommonJS module whose exports are Ajv's standalone validators of `schemas`,
 * each under its {@link schemaKey}. The build writes it next to the bundle so that `vaultd`
 * checks its config without compiling a schema at start-up; a schema not among them (a plugin's,
 * or any after a source edit) is compiled as before.
 * @param schemas the built-in config schemas (the file's and every pack's section).
 */
export function precompiledValidatorsSource(schemas: readonly JsonSchema[]): string {
  const { Ajv } = require('ajv') as typeof AjvModule;
  const addFormats = (require('ajv-formats') as typeof AddFormats).default;
  const standalone = require('ajv/dist/standalone/index.js') as {
    default: (ajv: InstanceType<typeof Ajv>, refs: Record<string, string>) => string;
  };
  // ajv-formats tells the standalone code where its formats come from (`code.formats`).
  const ajv = addFormats(new Ajv({ ...CONFIG_AJV_OPTIONS, code: { source: true } }));
  const refs: Record<string, string> = {};
  for (const schema of schemas) {
    const key = schemaKey(schema);
    if (key in refs) continue;
    ajv.addSchema(schema as object, key);
    refs[key] = key;
  }
  return `// Made by scripts/build.mjs from vaultd's config schemas (src/config/precompile.ts).\n${standalone.default(ajv, refs)}\n`;
}
