import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { metaValidatorsSource } from '../../src/config/precompile.ts';
import {
  compileSchema,
  loadMetaValidators,
  makeToolAjv,
  PRECOMPILED_META_SCHEMAS,
  sharedAjv,
  upgradeDraft7,
} from '../../src/protocol/ajv.ts';
import { validatorsModuleForTests } from '../helpers/validators.ts';

// The build writes validators of the meta-schemas (2020-12's and draft-07's) next to the bundle;
// with them, compileSchema checks a plugin's or an MCP server's schema itself and Ajv skips its
// own check (which first compiles the meta-schemas: about 120 ms of a start with a plugin). The
// check must be Ajv's: the same schemas refused, with the same message.

const file = validatorsModuleForTests('meta-validators.cjs', metaValidatorsSource);
after(() => loadMetaValidators(`${file()}.none`));

const DRAFT7 = 'http://json-schema.org/draft-07/schema#';
const DRAFT2020 = 'https://json-schema.org/draft/2020-12/schema';

const VALUES: readonly unknown[] = [
  -1,
  0,
  1.5,
  3,
  '',
  'string',
  'strin',
  'integer',
  'email',
  '#/$defs/x',
  true,
  false,
  null,
  [],
  ['string', 'null'],
  ['a', 'a'],
  [{ type: 'string' }],
  {},
  { type: 'number' },
  { type: 7 },
];
const KEYWORDS: readonly string[] = [
  'type',
  'enum',
  'const',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'format',
  'items',
  'prefixItems',
  'additionalItems',
  'minItems',
  'uniqueItems',
  'required',
  'properties',
  'additionalProperties',
  'patternProperties',
  'propertyNames',
  'dependentRequired',
  'dependencies',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  'if',
  'then',
  '$ref',
  '$defs',
  'definitions',
  'title',
  'description',
  'default',
  'examples',
  'contentEncoding',
  'unevaluatedProperties',
];

// A small deterministic generator (a test must fail the same way twice).
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomSchema(next: () => number, depth: number): Record<string, unknown> {
  const schema: Record<string, unknown> = {};
  const count = 1 + Math.floor(next() * 3);
  for (let i = 0; i < count; i++) {
    const key = KEYWORDS[Math.floor(next() * KEYWORDS.length)] as string;
    const roll = next();
    if (depth < 2 && roll < 0.3)
      schema[key] = { a: randomSchema(next, depth + 1), b: randomSchema(next, depth + 1) };
    else if (depth < 2 && roll < 0.45) schema[key] = [randomSchema(next, depth + 1)];
    else if (depth < 2 && roll < 0.55) schema[key] = randomSchema(next, depth + 1);
    else schema[key] = VALUES[Math.floor(next() * VALUES.length)];
  }
  return schema;
}

// Ajv's own answer, as compile gives it without the build's validators: null when accepted.
const reference = makeToolAjv();
function ajvVerdict(schema: object): string | null {
  try {
    reference.compile(schema);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

function vaultdVerdict(schema: object): string | null {
  try {
    compileSchema(schema);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('precompiled meta-schema validators', () => {
  it('are loaded, and the shared instance then leaves the check to compileSchema', () => {
    const loaded = loadMetaValidators(file());
    assert.ok(loaded !== null);
    for (const name of Object.keys(PRECOMPILED_META_SCHEMAS))
      assert.equal(typeof loaded[name], 'function', name);
    assert.equal(sharedAjv().opts.validateSchema, false);
  });

  it('refuse what Ajv refuses, with its message, and accept what it accepts', () => {
    loadMetaValidators(file());
    const fixed: object[] = [
      { type: 'object', properties: { a: { type: 'strin' } } },
      { type: 'object', properties: { a: { type: 'string', minLength: -1 } } },
      { type: 'object', required: 'a' },
      { anyOf: [] },
      { type: 'object', properties: { a: { $ref: '#/$defs/x' } }, $defs: { x: { enum: 'no' } } },
      { $schema: DRAFT7, type: 'array', items: [{ type: 'string' }], additionalItems: false },
      { $schema: DRAFT7, type: 'object', properties: { a: { type: 7 } } },
      { $schema: DRAFT7.slice(0, -1), type: 'object', properties: { a: { minimum: 'x' } } },
      { $schema: DRAFT2020, type: 'object', properties: { a: { type: ['string', 'null'] } } },
      { $schema: DRAFT2020, prefixItems: {} },
      // Meta-schemas the build did not precompile are left to Ajv (which knows neither of these).
      { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' },
      { $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object' },
      { $schema: 7, type: 'object' },
    ];
    let refused = 0;
    const check = (schema: object): void => {
      const upgraded = upgradeDraft7(schema) as object;
      const expected = ajvVerdict(upgraded);
      assert.equal(vaultdVerdict(schema), expected, JSON.stringify(schema));
      if (expected !== null) refused += 1;
    };
    for (const schema of fixed) check(schema);
    assert.ok(refused >= 11, `${refused} of the fixed schemas refused`);
    const next = random(20261127);
    for (let i = 0; i < 1_000; i++) {
      const schema = randomSchema(next, 0);
      if (i % 3 === 1) schema['$schema'] = DRAFT7;
      if (i % 3 === 2) schema['$schema'] = DRAFT2020;
      check(schema);
    }
    // Both verdicts are exercised by the random schemas, not only by the fixed ones.
    assert.ok(refused > 300 && refused < 1_000, `${refused} refused`);
  });

  it('compile a schema they accept to the validator Ajv makes', () => {
    loadMetaValidators(file());
    const schema = {
      type: 'object',
      properties: { n: { type: 'integer', minimum: 1 }, s: { type: 'string', default: 'x' } },
      required: ['n'],
      additionalProperties: false,
    };
    const validate = compileSchema(schema);
    const data: Record<string, unknown> = { n: 2 };
    assert.equal(validate(data), true);
    assert.deepEqual(data, { n: 2, s: 'x' });
    assert.equal(validate({ n: 0 }), false);
    assert.equal(validate({ n: 1, extra: true }), false);
  });
});
