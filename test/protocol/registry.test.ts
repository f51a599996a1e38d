import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ToolRegistry,
  defineTool,
  toAnthropicTools,
  toMcpTools,
  toOpenAITools,
} from '../../src/protocol/index.ts';
import type { SafetyLevel } from '../../src/protocol/index.ts';

function tool(name: string, safety: SafetyLevel, categories: string[], extra: object = {}) {
  return defineTool({
    name,
    description: `The ${name} tool.`,
    parameters: { text: { type: 'string', description: 'what to use' } },
    required: ['text'],
    safety,
    categories,
    handler: () => name,
    ...extra,
  });
}

describe('ToolRegistry', () => {
  it('replaces a tool registered again under the same name', () => {
    const registry = new ToolRegistry();
    registry.register(tool('echo', 'safe', ['a']));
    const second = registry.register(tool('echo', 'cautious', ['b']));
    assert.equal(registry.get('echo'), second);
    assert.deepEqual(registry.names(), ['echo']);
  });

  it('declares a plain definition on register', () => {
    const registry = new ToolRegistry();
    const registered = registry.register({
      name: 'echo',
      description: 'Echo.',
      parameters: {},
      safety: 'safe',
      handler: () => 'x',
    });
    assert.equal(registry.get('echo'), registered);
    assert.deepEqual(registered.inputSchema['required'], []);
    assert.throws(
      () =>
        registry.register({
          name: 'Bad',
          description: 'd',
          parameters: {},
          safety: 'safe',
          handler: () => 1,
        }),
      /snake_case/,
    );
  });

  it('returns undefined for an unknown name and unregisters', () => {
    const registry = new ToolRegistry();
    registry.register(tool('echo', 'safe', []));
    assert.equal(registry.get('nope'), undefined);
    assert.equal(registry.has('echo'), true);
    assert.equal(registry.unregister('echo'), true);
    assert.equal(registry.has('echo'), false);
    assert.equal(registry.unregister('echo'), false);
  });

  it('lists sorted names and filters by safety AND categories', () => {
    const registry = new ToolRegistry();
    registry.register(tool('send_mail', 'dangerous', ['net', 'mail']));
    registry.register(tool('search_web', 'safe', ['net', 'search']));
    registry.register(tool('make_dir', 'cautious', ['fs']));
    registry.register(tool('fetch_page', 'cautious', ['net']));
    const names = (filter: Parameters<ToolRegistry['list']>[0]) =>
      registry.list(filter).map((t) => t.name);
    assert.deepEqual(registry.names(), ['fetch_page', 'make_dir', 'search_web', 'send_mail']);
    assert.deepEqual(names({}), ['fetch_page', 'make_dir', 'search_web', 'send_mail']);
    assert.deepEqual(names({ maxSafety: 'safe' }), ['search_web']);
    assert.deepEqual(names({ maxSafety: 'cautious' }), ['fetch_page', 'make_dir', 'search_web']);
    assert.deepEqual(names({ categories: ['net'] }), ['fetch_page', 'search_web', 'send_mail']);
    assert.deepEqual(names({ categories: ['net', 'mail'] }), ['send_mail']);
    assert.deepEqual(names({ maxSafety: 'cautious', categories: ['net'] }), [
      'fetch_page',
      'search_web',
    ]);
    assert.deepEqual(names({ maxSafety: 'safe', categories: ['fs'] }), []);
    assert.throws(
      () => registry.list({ maxSafety: 'risky' as SafetyLevel }),
      /unknown safety level "risky"/,
    );
  });
});

describe('schema export', () => {
  const schema = {
    type: 'object',
    properties: { text: { type: 'string', description: 'what to use' } },
    required: ['text'],
    additionalProperties: false,
  };
  const search = tool('search_web', 'safe', ['net'], {
    readOnly: true,
    idempotent: true,
    outputSchema: { type: 'object', properties: { results: { type: 'array' } } },
  });
  const send = tool('send_mail', 'dangerous', ['net'], {
    parameters: { text: { type: 'string', description: 'what to use' }, cc: { type: 'string' } },
  });

  it('exports OpenAI function tools', () => {
    assert.deepEqual(toOpenAITools([search]), [
      {
        type: 'function',
        function: { name: 'search_web', description: 'The search_web tool.', parameters: schema },
      },
    ]);
  });

  it('marks OpenAI strict only for schemas that qualify', () => {
    const [a, b] = toOpenAITools([search, send], { strict: true });
    assert.equal(a?.function.strict, true);
    assert.equal(b?.function.strict, false);
  });

  it('exports Anthropic tools', () => {
    assert.deepEqual(toAnthropicTools([search]), [
      { name: 'search_web', description: 'The search_web tool.', input_schema: schema },
    ]);
  });

  it('exports MCP tools with annotations derived from the declaration', () => {
    assert.deepEqual(toMcpTools([search, send]), [
      {
        name: 'search_web',
        description: 'The search_web tool.',
        inputSchema: schema,
        outputSchema: { type: 'object', properties: { results: { type: 'array' } } },
        annotations: {
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
      {
        name: 'send_mail',
        description: 'The send_mail tool.',
        inputSchema: { ...schema, properties: { ...schema.properties, cc: { type: 'string' } } },
        annotations: {
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: false,
          openWorldHint: false,
        },
      },
    ]);
  });

  it('hands out copies that can be edited', () => {
    const [exported] = toAnthropicTools([search]);
    assert.ok(exported !== undefined && !Object.isFrozen(exported.input_schema));
    (exported.input_schema as { extra?: boolean }).extra = true;
    assert.equal(search.inputSchema['extra'], undefined);
  });
});
