import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { builtinToolSchemas, toolValidatorsSource } from '../../src/config/precompile.ts';
import {
  compileSchema,
  loadToolValidators,
  sharedAjv,
  upgradeDraft7,
} from '../../src/protocol/ajv.ts';
import { schemaKey } from '../../src/protocol/precompiled.ts';
import type { Tool } from '../../src/protocol/types.ts';
import { BUILTIN_PACKS } from '../../src/tools/index.ts';
import { validatorOutcome, validatorsModuleForTests } from '../helpers/validators.ts';

// The build writes validators of the built-in tools' schemas next to the bundle, so that a daemon
// with only built-in tools never loads Ajv. They must check arguments exactly as the compiled
// ones do: the same verdict, the same errors and the same defaults filled in.

const tools: Tool[] = BUILTIN_PACKS.flatMap((pack) => [...(pack.staticTools ?? [])]);
const schemas = builtinToolSchemas();

const file = validatorsModuleForTests('tool-validators.cjs', () => toolValidatorsSource(schemas));

const VALUES: readonly unknown[] = [
  null,
  -1,
  0,
  2.5,
  100_000,
  '',
  'x',
  '../etc/passwd',
  'https://example.com/a',
  'a@example.com',
  true,
  [],
  ['a', 1],
  {},
  { k: 'v' },
];

/** Arguments for a tool: each parameter set to each value in turn, one missing, one unknown. */
function* argumentSets(tool: Tool): Generator<Record<string, unknown>> {
  const params = Object.keys(tool.parameters);
  const base: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(tool.parameters)) {
    const type = ([] as unknown[]).concat((schema as { type?: unknown }).type ?? 'string')[0];
    base[name] =
      type === 'integer' || type === 'number'
        ? 1
        : type === 'boolean'
          ? true
          : type === 'array'
            ? []
            : type === 'object'
              ? {}
              : 'text';
  }
  yield base;
  yield {};
  for (const name of params) {
    for (const value of VALUES) yield { ...base, [name]: value };
    const { [name]: _dropped, ...rest } = base;
    yield rest;
  }
  yield { ...base, no_such_parameter: 1 };
}

describe('precompiled tool validators', () => {
  it('has one validator per built-in tool schema, and compileSchema uses it', () => {
    assert.ok(tools.length >= 20, `${tools.length} static tools`);
    const precompiled = loadToolValidators(file());
    assert.ok(precompiled !== null);
    for (const schema of schemas) {
      const validate: unknown = precompiled[schemaKey(upgradeDraft7(schema))];
      assert.equal(typeof validate, 'function', `no validator for ${JSON.stringify(schema)}`);
      assert.equal(compileSchema(schema), validate);
    }
    // A schema the build did not see (a plugin's, an MCP server's) is compiled as before.
    const other = { type: 'object', properties: { n: { type: 'integer' } } };
    assert.equal(precompiled[schemaKey(other)], undefined);
    assert.equal(compileSchema(other)({ n: 'x' }), false);
  });

  it("gives the verdict, errors and defaults of the compiled schema on every tool's arguments", () => {
    const precompiled = loadToolValidators(file())!;
    let compared = 0;
    for (const tool of tools) {
      const upgraded = upgradeDraft7(tool.inputSchema) as object;
      const compiled = sharedAjv().compile(upgraded);
      const built = precompiled[schemaKey(upgraded)]!;
      for (const args of argumentSets(tool)) {
        assert.deepEqual(
          validatorOutcome(built, args),
          validatorOutcome(compiled, args),
          `${tool.name}: ${JSON.stringify(args)}`,
        );
        compared += 1;
      }
    }
    assert.ok(compared > 1_000, `only ${compared} argument sets compared`);
  });
});
