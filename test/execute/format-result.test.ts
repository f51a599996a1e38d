import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EMPTY_OUTPUT, formatOutput } from '../../src/execute/index.ts';
import { toolOutput } from '../../src/protocol/index.ts';

describe('formatOutput', () => {
  it('passes strings through without data', () => {
    assert.deepEqual(formatOutput('hello\nworld'), { content: 'hello\nworld' });
    assert.deepEqual(formatOutput(''), { content: '' });
  });

  it('states an empty result for undefined and null', () => {
    assert.deepEqual(formatOutput(undefined), { content: EMPTY_OUTPUT });
    assert.deepEqual(formatOutput(null), { content: EMPTY_OUTPUT });
    assert.notEqual(EMPTY_OUTPUT, '');
  });

  it('keeps the content and the data of a toolOutput apart', () => {
    const out = formatOutput(toolOutput('Wrote a.md', { path: 'a.md', when: new Date(0) }));
    assert.deepEqual(out, {
      content: 'Wrote a.md',
      data: { path: 'a.md', when: '1970-01-01T00:00:00.000Z' },
    });
    assert.deepEqual(formatOutput(toolOutput('text only', undefined)), { content: 'text only' });
    assert.deepEqual(formatOutput({ content: 'a plain object' }).data, {
      content: 'a plain object',
    });
  });

  it('gives scalars as text', () => {
    assert.deepEqual(formatOutput(42), { content: '42' });
    assert.deepEqual(formatOutput(false), { content: 'false' });
  });

  it('renders objects as readable text plus JSON-safe data', () => {
    const value = {
      results: [{ title: 'A', url: 'https://a.example/', snippet: 'first' }],
      when: new Date('2026-01-02T03:04:05.000Z'),
      skipped: undefined,
    };
    const out = formatOutput(value);
    assert.deepEqual(out.data, {
      results: [{ title: 'A', url: 'https://a.example/', snippet: 'first' }],
      when: '2026-01-02T03:04:05.000Z',
    });
    assert.equal(
      out.content,
      [
        'results:',
        '  - title: A',
        '    url: https://a.example/',
        '    snippet: first',
        'when: 2026-01-02T03:04:05.000Z',
      ].join('\n'),
    );
    assert.deepEqual(formatOutput(value), out, 'the same value always gives the same text');
  });

  it('keeps the text of a toolOutput as content beside its JSON-safe data', () => {
    const when = new Date('2026-01-02T03:04:05.000Z');
    assert.deepEqual(formatOutput(toolOutput('src/a.ts:3:7 error', { when, gone: undefined })), {
      content: 'src/a.ts:3:7 error',
      data: { when: '2026-01-02T03:04:05.000Z' },
    });
    assert.deepEqual(formatOutput(toolOutput('only text', undefined)), { content: 'only text' });
    assert.deepEqual(formatOutput({ content: 'x', data: 1 }).data, { content: 'x', data: 1 });
  });

  it('renders arrays and says when they are empty', () => {
    assert.deepEqual(formatOutput([1, 'two']), { content: '- 1\n- two', data: [1, 'two'] });
    assert.deepEqual(formatOutput([]), { content: '(empty list)', data: [] });
    assert.deepEqual(formatOutput({}), { content: '(empty object)', data: {} });
  });

  it('shows a large value as JSON: YAML of 200,000 keys took seconds, and the cap cuts it anyway', () => {
    const large: Record<string, number> = {};
    for (let i = 0; i < 20_000; i++) large[`key_${i}`] = i;
    const out = formatOutput(large);
    assert.deepEqual(out.data, large);
    assert.deepEqual(JSON.parse(out.content), large);
    // Under the limit it stays YAML.
    const small = formatOutput({ a: 1, b: [2, 3] });
    assert.equal(small.content, 'a: 1\nb:\n  - 2\n  - 3');
  });

  it('keeps long lines unfolded', () => {
    const long = 'word '.repeat(60).trim();
    assert.equal(formatOutput({ text: long }).content, `text: ${long}`);
  });

  it('describes output that is not JSON instead of failing', () => {
    const circular: Record<string, unknown> = {};
    circular['self'] = circular;
    const out = formatOutput(circular);
    assert.match(out.content, /cannot be shown as JSON/);
    assert.equal(out.data, undefined);
  });
});

describe('formatOutput: data nested past 256 levels', () => {
  it('keeps it as JSON text only, so nothing recursive walks it', () => {
    const nest = (levels: number): unknown => {
      let value: unknown = 'leaf';
      for (let i = 1; i < levels; i++) value = [value];
      return { deep: value };
    };
    const kept = formatOutput(nest(255));
    assert.notEqual(kept.data, undefined);
    const text = formatOutput(nest(258));
    assert.equal(text.data, undefined);
    assert.ok(text.content.startsWith('{"deep":[[['), text.content.slice(0, 40));
    const deeper = formatOutput(nest(50_000));
    assert.equal(deeper.data, undefined);
    assert.equal(deeper.content, '(output nested more than 256 levels deep, too deep to show)');
  });
});
