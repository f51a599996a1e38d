import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineTool, validateArguments } from '../../src/protocol/index.ts';

const tool = defineTool({
  name: 'search_web',
  description: 'Search the web.',
  parameters: {
    query: { type: 'string', minLength: 1 },
    num_results: { type: 'integer', minimum: 1, maximum: 20, default: 5 },
    method: { type: 'string', enum: ['email', 'slack'] },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 2 },
    filter: {
      type: 'object',
      properties: { site: { type: 'string', format: 'hostname' } },
      required: ['site'],
      additionalProperties: false,
    },
  },
  required: ['query'],
  safety: 'safe',
  handler: () => 'ok',
});

describe('validateArguments', () => {
  it('applies defaults on a copy and leaves the input alone', () => {
    const input = { query: 'agents' };
    const result = validateArguments(tool, input);
    assert.deepEqual(result, { ok: true, args: { query: 'agents', num_results: 5 } });
    assert.deepEqual(input, { query: 'agents' });
  });

  const cases: [string, unknown, string][] = [
    ['a missing required parameter', {}, "missing required parameter 'query' (string)"],
    [
      'a number over its maximum',
      { query: 'x', num_results: 50 },
      "parameter 'num_results' must be an integer ≤ 20, got 50",
    ],
    [
      'a number under its minimum',
      { query: 'x', num_results: 0 },
      "parameter 'num_results' must be an integer ≥ 1, got 0",
    ],
    [
      'a wrong type',
      { query: 'x', num_results: '5' },
      `parameter 'num_results' must be an integer, got "5"`,
    ],
    [
      'a fraction for an integer',
      { query: 'x', num_results: 2.5 },
      "parameter 'num_results' must be an integer, got 2.5",
    ],
    [
      'an unknown parameter',
      { query: 'x', foo: 1 },
      "unknown parameter 'foo'; expected one of: query, num_results, method, tags, filter",
    ],
    [
      'a value outside an enum',
      { query: 'x', method: 'sms' },
      `parameter 'method' must be one of: "email", "slack" (got "sms")`,
    ],
    [
      'a too short string',
      { query: '' },
      `parameter 'query' must be a string of at least 1 character, got "" (length 0)`,
    ],
    [
      'too many items',
      { query: 'x', tags: ['a', 'b', 'c'] },
      "parameter 'tags' must be an array of at most 2 items, got 3",
    ],
    ['a bad array item', { query: 'x', tags: [1] }, "parameter 'tags[0]' must be a string, got 1"],
    [
      'a missing nested property',
      { query: 'x', filter: {} },
      "parameter 'filter' is missing required property 'site'",
    ],
    [
      'a bad format',
      { query: 'x', filter: { site: 'not a host' } },
      `parameter 'filter.site' must be a valid hostname, got "not a host"`,
    ],
    [
      'arguments that are not an object',
      ['query'],
      'parameters must be a JSON object, got an array of 1 item',
    ],
  ];
  for (const [what, args, message] of cases) {
    it(`names the parameter for ${what}`, () => {
      assert.deepEqual(validateArguments(tool, args), { ok: false, message });
    });
  }

  it('reports every problem at once', () => {
    const result = validateArguments(tool, { num_results: 99, foo: 1, bar: 2 });
    assert.equal(result.ok, false);
    const message = result.ok ? '' : result.message;
    assert.match(message, /missing required parameter 'query'/);
    assert.match(message, /parameter 'num_results' must be an integer ≤ 20, got 99/);
    assert.match(message, /unknown parameters 'foo', 'bar'; expected one of:/);
  });

  it('names a key an object parameter does not allow, once, without a vaguer second message', () => {
    const withEnv = defineTool({
      name: 'run_it',
      description: 'Runs it.',
      parameters: {
        env: {
          type: 'object',
          additionalProperties: { type: 'string' },
          propertyNames: { enum: ['LANG', 'TZ'] },
        },
      },
      required: [],
      safety: 'safe',
      handler: () => 'ok',
    });
    const result = validateArguments(withEnv, { env: { FOO: 'bar' } });
    assert.equal(result.ok, false);
    assert.equal(
      result.ok ? '' : result.message,
      `key 'FOO' of parameter 'env' must be one of: "LANG", "TZ" (got "FOO")`,
    );
  });
});
