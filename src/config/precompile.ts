import type { Ajv } from 'ajv';
import { createRequire } from 'node:module';
import { makeToolAjv, PRECOMPILED_META_SCHEMAS, upgradeDraft7 } from '../protocol/ajv.ts';
import { schemaKey } from '../protocol/precompiled.ts';
import type { JsonSchema } from '../protocol/types.ts';
import { packConfigSchemas } from '../tools/host.ts';
import { BUILTIN_PACKS } from '../tools/index.ts';
import { CONFIG_SCHEMA } from './schema.ts';
import { makeConfigAjv } from './validate-schema.ts';

const require = createRequire(import.meta.url);

/** The config schemas every start checks: the file's, and every built-in pack's section. */
export function builtinConfigSchemas(): JsonSchema[] {
  return [CONFIG_SCHEMA, ...new Set(Object.values(packConfigSchemas(BUILTIN_PACKS)))];
}

/**
 * The schemas of the built-in packs' static tools: their input schemas, and the output and
 * config schemas a tool's first call checks.
 */
export function builtinToolSchemas(): JsonSchema[] {
  return BUILTIN_PACKS.flatMap((pack) => pack.staticTools ?? []).flatMap((tool) =>
    [tool.inputSchema, tool.outputSchema, tool.configSchema].filter(
      (schema): schema is JsonSchema => schema !== undefined,
    ),
  );
}

/**
 * The source of a CommonJS module whose exports are Ajv's standalone validators of the built-in
 * config schemas, each under its {@link schemaKey}. The build writes it next to the bundle
 * (dist/config-validators.cjs) so that `vaultd` checks its config without loading Ajv; a schema
 * not among them (a plugin's) is compiled as before.
 * @param schemas the built-in config schemas (the file's and every pack's section).
 */
export function configValidatorsSource(schemas: readonly JsonSchema[]): string {
  return standaloneSource(makeConfigAjv({ code: { source: true } }), schemas);
}

/**
 * The same for the built-in tools' schemas (dist/tool-validators.cjs), keyed as `compileSchema`
 * looks them up: after draft-07's tuple keywords are read as 2020-12's.
 * @param schemas the built-in tools' input, output and config schemas, as declared.
 */
export function toolValidatorsSource(schemas: readonly JsonSchema[]): string {
  return standaloneSource(
    makeToolAjv({ code: { source: true } }) as unknown as Ajv,
    schemas.map((schema) => upgradeDraft7(schema) as JsonSchema),
  );
}

/**
 * The same for the meta-schemas a tool's schema is checked against (dist/meta-validators.cjs),
 * exported under the names `compileSchema` looks up.
 */
export function metaValidatorsSource(): string {
  return moduleSource(makeToolAjv({ code: { source: true } }) as unknown as Ajv, {
    ...PRECOMPILED_META_SCHEMAS,
  });
}

function standaloneSource(ajv: Ajv, schemas: readonly JsonSchema[]): string {
  const refs: Record<string, string> = {};
  for (const schema of schemas) {
    const key = schemaKey(schema);
    if (key in refs) continue;
    ajv.addSchema(schema as object, key);
    refs[key] = key;
  }
  return moduleSource(ajv, refs);
}

// The module's text: Ajv's standalone code exporting the validator of each ref under its name
// (ajv-formats told the instance where its formats come from, `code.formats`).
function moduleSource(ajv: Ajv, refs: Record<string, string>): string {
  const standalone = require('ajv/dist/standalone/index.js') as {
    default: (ajv: Ajv, refs: Record<string, string>) => string;
  };
  return `// Made by scripts/build.mjs (src/config/precompile.ts).\n${standalone.default(ajv, refs)}\n`;
}
