import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { builtinConfigSchemas, configValidatorsSource } from '../../src/config/precompile.ts';
import { CONFIG_SCHEMA } from '../../src/config/schema.ts';
import {
  compileWithAjv,
  configValidator,
  loadPrecompiled,
} from '../../src/config/validate-schema.ts';
import { schemaKey } from '../../src/protocol/precompiled.ts';
import type { JsonSchema } from '../../src/protocol/types.ts';
import { packConfigSchemas } from '../../src/tools/host.ts';
import { BUILTIN_PACKS } from '../../src/tools/index.ts';
import { sampleConfigText } from '../../src/config/index.ts';
import { validatorOutcome, validatorsModuleForTests } from '../helpers/validators.ts';

// The build writes validators of the built-in config schemas next to the bundle (scripts/build.mjs),
// so that start-up compiles none. They must check a config exactly as the compiled ones do: the
// same verdict, the same errors and the same defaults filled in.

const packSchemas = packConfigSchemas(BUILTIN_PACKS);
const schemas = builtinConfigSchemas();

const file = validatorsModuleForTests('config-validators.cjs', () =>
  configValidatorsSource(schemas),
);

const WRONG_VALUES: readonly unknown[] = [
  null,
  -1,
  0,
  1.5,
  70_000,
  '',
  'x',
  'not a url',
  'https://example.com/hook',
  '*/5 * * * *',
  true,
  [],
  ['a', 3],
  {},
  { zz: 1 },
];

/** Every leaf of `data` set to each wrong value, one at a time, and an unknown key per object. */
function* mutations(data: unknown): Generator<unknown> {
  const paths: (string | number)[][] = [];
  const walk = (value: unknown, path: (string | number)[]): void => {
    paths.push(path);
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]));
    else if (value !== null && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  walk(data, []);
  for (const path of paths) {
    for (const wrong of WRONG_VALUES) yield setAt(data, path, wrong);
    yield setAt(data, [...path, 'no_such_key'], 1);
  }
}

function setAt(data: unknown, path: readonly (string | number)[], value: unknown): unknown {
  if (path.length === 0) return structuredClone(value);
  const copy = structuredClone(data) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== 'object') return copy;
    node = next as Record<string | number, unknown>;
  }
  node[path.at(-1)!] = structuredClone(value);
  return copy;
}

describe('precompiled config validators', () => {
  it('has one validator per built-in schema, and configValidator uses it', () => {
    const precompiled = loadPrecompiled(file());
    assert.ok(precompiled !== null);
    for (const schema of schemas) {
      const validate: unknown = precompiled[schemaKey(schema)];
      assert.equal(typeof validate, 'function', `no validator for ${JSON.stringify(schema)}`);
      assert.equal(configValidator(schema), validate);
    }
    // A schema the build did not see is compiled as before.
    const other: JsonSchema = { type: 'object', properties: { a: { type: 'integer' } } };
    assert.equal(precompiled[schemaKey(other)], undefined);
    assert.equal(configValidator(other)({ a: 'x' }), false);
  });

  it('keys by content: one key change is another schema', () => {
    const changed = structuredClone(CONFIG_SCHEMA) as { properties: Record<string, JsonSchema> };
    changed.properties['concurrency'] = { type: 'integer', minimum: 2 };
    assert.notEqual(schemaKey(changed as JsonSchema), schemaKey(CONFIG_SCHEMA));
    assert.equal(schemaKey(structuredClone(CONFIG_SCHEMA)), schemaKey(CONFIG_SCHEMA));
  });

  it('gives the verdict, errors and defaults of the compiled schema on the sample config and thousands of broken ones', () => {
    const precompiled = loadPrecompiled(file())!;
    const sample = parse(sampleConfigText()) as Record<string, unknown>;
    const sections = (sample['tools'] ?? {}) as Record<string, unknown>;
    let compared = 0;
    const cases: [JsonSchema, unknown][] = [[CONFIG_SCHEMA, sample]];
    for (const [name, schema] of Object.entries(packSchemas)) {
      cases.push([schema, {}], [schema, { enabled: true }]);
      if (sections[name] !== undefined) cases.push([schema, sections[name]]);
    }
    for (const [schema, base] of cases) {
      const compiled = compileWithAjv(schema);
      const built = precompiled[schemaKey(schema)]!;
      for (const data of [base, ...mutations(base)]) {
        const a = validatorOutcome(compiled, data);
        const b = validatorOutcome(built, data);
        assert.deepEqual(b, a, `differs on ${JSON.stringify(data).slice(0, 300)}`);
        compared += 1;
      }
    }
    assert.ok(compared > 1_000, `only ${compared} configs compared`);
  });
});
