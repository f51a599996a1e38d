import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkToolSchemas,
  defineTool,
  getValidator,
  isDefinedTool,
  withPack,
} from '../../src/protocol/index.ts';
import type { ToolDefinition } from '../../src/protocol/index.ts';

function def(overrides: Partial<Record<keyof ToolDefinition, unknown>> = {}): ToolDefinition {
  return {
    name: 'search_web',
    description: 'Search the web.',
    parameters: { query: { type: 'string' }, num_results: { type: 'integer', default: 5 } },
    required: ['query'],
    safety: 'safe',
    handler: () => 'ok',
    ...overrides,
  } as ToolDefinition;
}

describe('defineTool', () => {
  it('fills defaults and builds a closed input schema', () => {
    const tool = defineTool(def({ required: undefined }));
    assert.deepEqual(tool.categories, []);
    assert.deepEqual(tool.required, []);
    assert.equal(tool.readOnly, false);
    assert.equal(tool.idempotent, false);
    assert.deepEqual(tool.inputSchema, {
      type: 'object',
      properties: { query: { type: 'string' }, num_results: { type: 'integer', default: 5 } },
      required: [],
      additionalProperties: false,
    });
  });

  it('keeps the path parameters, and refuses one that is not a declared string parameter', () => {
    const tool = defineTool(
      def({
        parameters: { path: { type: 'string' } },
        required: undefined,
        pathParameters: ['path'],
      }),
    );
    assert.deepEqual(tool.pathParameters, ['path']);
    assert.ok(Object.isFrozen(tool.pathParameters));
    assert.equal(defineTool(def()).pathParameters, undefined);
    assert.throws(
      () => defineTool(def({ pathParameters: ['file'] })),
      /path parameter "file" must be declared in parameters as a string/,
    );
    assert.throws(
      () => defineTool(def({ pathParameters: ['num_results'] })),
      /path parameter "num_results" must be declared/,
    );
  });

  it('returns a frozen tool that does not share the author’s schema objects', () => {
    const parameters = { query: { type: 'string' } };
    const tool = defineTool(def({ parameters, required: ['query'] }));
    assert.ok(Object.isFrozen(tool));
    assert.ok(Object.isFrozen(tool.inputSchema));
    assert.ok(Object.isFrozen(tool.parameters['query']));
    assert.throws(() => {
      (tool as { name: string }).name = 'other';
    }, TypeError);
    parameters.query.type = 'number';
    assert.deepEqual(tool.parameters['query'], { type: 'string' });
    assert.ok(isDefinedTool(tool));
    assert.ok(!isDefinedTool(def()));
  });

  it('compiles the validator once per tool', () => {
    const tool = defineTool(def());
    assert.equal(getValidator(tool), getValidator(tool));
    assert.notEqual(getValidator(tool), getValidator(defineTool(def())));
  });

  const invalid: [string, Partial<Record<keyof ToolDefinition, unknown>>, RegExp][] = [
    ['a name with capitals', { name: 'SearchWeb' }, /"SearchWeb" is not snake_case/],
    ['a name starting with a digit', { name: '1search' }, /"1search" is not snake_case/],
    ['a name with a dash', { name: 'search-web' }, /"search-web" is not snake_case/],
    [
      'an undeclared required parameter',
      { required: ['query', 'limit'] },
      /required parameter "limit" is not declared/,
    ],
    [
      'an unknown safety level',
      { safety: 'risky' },
      /unknown safety level "risky"; expected one of: safe, cautious, dangerous/,
    ],
    [
      'a parameter type outside the supported ones',
      { parameters: { q: { type: 'date' } }, required: [] },
      /parameter 'q' has type "date"/,
    ],
    [
      'both parameters and a whole input schema',
      { parameters: {}, input: { type: 'object' } },
      /give parameters or input, not both/,
    ],
    [
      'an input schema that is not of an object',
      { parameters: undefined, input: { type: 'array' } },
      /input must describe an object/,
    ],
    [
      'a misspelt parameter type',
      { parameters: { q: { type: 'strng' } }, required: [] },
      /parameter 'q' has type "strng"/,
    ],
    [
      'a parameter schema Ajv cannot compile',
      { parameters: { q: { type: 'string', minLength: 'three' } }, required: [] },
      /parameter 'q' has a schema Ajv cannot compile \{"type":"string","minLength":"three"\}/,
    ],
    [
      'an output schema Ajv cannot compile',
      { outputSchema: { type: 'object', properties: 5 } },
      /outputSchema \{"type":"object","properties":5\} is not a valid JSON Schema/,
    ],
    ['a missing handler', { handler: undefined }, /handler must be a function/],
    ['an empty description', { description: ' ' }, /description must be a non-empty string/],
    ['a bad rate limit', { rateLimit: { max: 0, windowMs: 1000 } }, /rateLimit must be/],
  ];
  for (const [what, overrides, message] of invalid) {
    it(`throws a clear error for ${what}`, () => {
      assert.throws(() => checkToolSchemas(defineTool(def(overrides))), message);
    });
  }

  it('compiles schemas on first use, or at once with checkToolSchemas', () => {
    const bad = def({ parameters: { q: { type: 'string', minLength: 'three' } }, required: [] });
    const tool = defineTool(bad);
    assert.throws(() => getValidator(tool), /parameter 'q' has a schema Ajv cannot compile/);
    assert.throws(() => checkToolSchemas(defineTool(bad)), /Ajv cannot compile/);
    const good = defineTool(def({}));
    assert.equal(checkToolSchemas(good), good);
    assert.equal(getValidator(withPack(good, 'other')), getValidator(good));
  });
});

describe('defineTool with a whole input schema', () => {
  it('takes what MCP servers send: null types, $defs, open objects, 2020-12 and draft-07 keywords', async () => {
    const { defineTool: define } = await import('../../src/protocol/define-tool.ts');
    const { validateArguments } = await import('../../src/protocol/validate.ts');
    const tool = define({
      name: 'mcp_like',
      description: 'A tool with a schema from elsewhere.',
      safety: 'dangerous',
      input: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: {
          path: { type: 'string' },
          note: { type: ['string', 'null'] },
          pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] },
          options: { $ref: '#/$defs/options' },
        },
        required: ['path'],
        additionalProperties: true,
        $defs: { options: { type: 'object', properties: { deep: { type: 'boolean' } } } },
      },
      handler: () => 'ok',
    });
    assert.deepEqual(tool.required, ['path']);
    assert.ok(tool.parameters['note']);
    const ok = validateArguments(tool, {
      path: 'a',
      note: null,
      pair: ['x', 1],
      options: { deep: true },
      extra: 'open objects stay open',
    });
    assert.equal(ok.ok, true, ok.ok ? '' : ok.message);
    const bad = validateArguments(tool, { path: 'a', pair: ['x', 'y'], options: { deep: 'no' } });
    assert.equal(bad.ok, false);
    assert.match(bad.ok ? '' : bad.message, /pair\[1\]/);
    assert.match(bad.ok ? '' : bad.message, /options\.deep/);
  });
});
