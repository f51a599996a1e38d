import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendResults,
  deriveBlockId,
  deriveCallId,
  mightHaveToolCall,
  parseNote,
} from '../../src/note/index.ts';
import { hashArguments } from '../../src/protocol/hash-arguments.ts';
import { makeResult } from './results.ts';
import { readNote, toCrlf } from './fixtures.ts';

test('the SPEC example gives one call with a derived id and its front-matter', () => {
  const note = parseNote(readNote('spec-example.md'));
  assert.deepEqual(note.data, { title: 'Research agents' });
  assert.equal(note.calls.length, 1);
  const [call] = note.calls;
  const args = { query: 'AI agent frameworks', num_results: 3 };
  assert.deepEqual(call?.arguments, args);
  assert.equal(call?.name, 'search_web');
  assert.equal(call?.id, deriveCallId('search_web', args, 0));
  assert.match(call?.id ?? '', /^call_[0-9a-f]{12}$/);
  assert.equal(call?.explicitId, false);
  const text = readNote('spec-example.md');
  assert.deepEqual(call?.start, { line: 6, column: 1, offset: text.indexOf('```json') });
  assert.equal(call?.end.line, 8);
  assert.deepEqual(note.invalid, []);
  assert.deepEqual(note.diagnostics, []);
});

test('several calls come in block order; identical calls get distinct stable ids', () => {
  const note = parseNote(readNote('several-calls.md'));
  assert.deepEqual(
    note.calls.map((c) => [c.name, c.explicitId]),
    [
      ['search_web', false],
      ['search_web', false],
      ['send_notification', true],
    ],
  );
  const [first, second, third] = note.calls;
  assert.equal(first?.id, deriveCallId('search_web', { query: 'one' }, 0));
  assert.equal(second?.id, deriveCallId('search_web', { query: 'one' }, 1));
  assert.notEqual(first?.id, second?.id);
  assert.equal(third?.id, 'notify-owner.1');
  assert.deepEqual(third?.arguments, { recipient: 'owner@example.com', subject: 's', body: 'b' });
  assert.deepEqual(note.invalid, []);
  assert.deepEqual(parseNote(readNote('several-calls.md')).calls, note.calls, 'stable on re-scan');
});

test('a call written three times among others counts its own occurrences, whatever its key order', () => {
  const block = (args: string): string =>
    `\`\`\`json\n{"tool_call": {"name": "t", "parameters": ${args}}}\n\`\`\`\n\n`;
  const note = parseNote(
    block('{"a": 1, "b": 2}') +
      block('{"a": 2}') +
      block('{"b": 2, "a": 1}') +
      block('{"a": 2, "c": 1}') +
      block('{"a": 1, "b": 2}') +
      block('{"a": 2}'),
  );
  assert.deepEqual(
    note.calls.map((c) => c.id),
    [
      deriveCallId('t', { a: 1, b: 2 }, 0),
      deriveCallId('t', { a: 2 }, 0),
      deriveCallId('t', { a: 1, b: 2 }, 1),
      deriveCallId('t', { a: 2, c: 1 }, 0),
      deriveCallId('t', { a: 1, b: 2 }, 2),
      deriveCallId('t', { a: 2 }, 1),
    ],
  );
  assert.equal(new Set(note.calls.map((c) => c.id)).size, 6);
});

test('two different calls whose ids share the bits the parse looks them up by are told apart', () => {
  // Found by search: the ids of these two calls agree in their 6th to 12th characters, the 28
  // bits find-calls.ts keys its table of first calls by, and differ after them.
  const one = { text: 'c8503' };
  const two = { text: 'c33944' };
  const idOne = deriveCallId('bench_echo', one, 0);
  const idTwo = deriveCallId('bench_echo', two, 0);
  assert.equal(idOne.slice(0, 12), idTwo.slice(0, 12));
  assert.notEqual(idOne, idTwo);
  const block = (args: object | undefined): string =>
    `\`\`\`json\n${JSON.stringify({ tool_call: { name: 'bench_echo', parameters: args } })}\n\`\`\`\n\n`;
  // 1,000 other calls between them and their repeats: the table the ids are looked up in grows
  // past its first size in between.
  const others = Array.from({ length: 1000 }, (_, i) => ({ text: `other ${i}` }));
  const note = parseNote(
    [one, two, two, ...others, one, two, others[3], others[999]].map(block).join(''),
  );
  assert.deepEqual(
    note.calls.map((c) => c.id),
    [
      idOne,
      idTwo,
      deriveCallId('bench_echo', two, 1),
      ...others.map((args) => deriveCallId('bench_echo', args, 0)),
      deriveCallId('bench_echo', one, 1),
      deriveCallId('bench_echo', two, 2),
      deriveCallId('bench_echo', others[3] as { text: string }, 1),
      deriveCallId('bench_echo', others[999] as { text: string }, 1),
    ],
  );
});

test('derived ids do not depend on key order', () => {
  assert.equal(
    deriveCallId('t', { a: 1, b: { c: 2, d: 3 } }, 0),
    deriveCallId('t', { b: { d: 3, c: 2 }, a: 1 }, 0),
  );
  assert.notEqual(deriveCallId('t', { a: 1 }, 0), deriveCallId('t', { a: 1 }, 1));
  assert.notEqual(deriveCallId('t', { a: 1 }, 0), deriveCallId('u', { a: 1 }, 0));
  assert.match(deriveBlockId('x', 0), /^block_[0-9a-f]{12}$/);
});

test('calls are found in lists, quotes, nested quotes, callouts and tilde or long fences', () => {
  const note = parseNote(readNote('containers.md'));
  assert.deepEqual(
    note.calls.map((c) => c.name),
    ['in_list', 'in_quote', 'in_nested_quote', 'in_callout', 'in_tilde_fence', 'in_long_fence'],
  );
  assert.deepEqual(note.calls[3]?.arguments, { n: 1 });
  assert.deepEqual(note.calls[5]?.arguments, { text: '```' });
  assert.deepEqual(note.invalid, []);
});

test('CRLF and a BOM are tolerated, with the same calls and places', () => {
  const lf = parseNote(readNote('containers.md'));
  const crlf = parseNote(toCrlf(readNote('containers.md')));
  assert.deepEqual(
    crlf.calls.map((c) => [c.id, c.start.line, c.end.line]),
    lf.calls.map((c) => [c.id, c.start.line, c.end.line]),
  );
  const bom = parseNote(`\uFEFF${toCrlf(readNote('spec-example.md'))}`);
  assert.deepEqual(bom.data, { title: 'Research agents' });
  assert.equal(bom.calls.length, 1);
  const withBom = '\uFEFF```json\n{"tool_call": {"name": "a", "parameters": {}}}\n```\n';
  const plainBom = parseNote(withBom);
  assert.equal(plainBom.calls[0]?.start.offset, 1);
  assert.equal(plainBom.calls[0]?.end.offset, withBom.lastIndexOf('```') + 3);
});

test('invalid blocks get INVALID_JSON or INVALID_CALL with messages that say what to change', () => {
  const text = readNote('invalid-blocks.md');
  const note = parseNote(text);
  assert.deepEqual(note.calls, []);
  const rows = note.invalid.map((b) => [b.code, b.unclosed, b.name]);
  assert.deepEqual(rows, [
    ['INVALID_JSON', false, undefined],
    ['INVALID_CALL', false, 'Search-Web'],
    ['INVALID_CALL', false, 'search_web'],
    ['INVALID_CALL', false, 'search_web'],
    ['INVALID_CALL', false, 'search_web'],
    ['INVALID_CALL', false, undefined],
    ['INVALID_CALL', true, 'search_web'],
  ]);
  const messages = note.invalid.map((b) => b.message);
  assert.match(messages[0] ?? '', /not valid JSON: .* at line 5, column 31/);
  assert.match(messages[1] ?? '', /snake_case .* got "Search-Web"/);
  assert.match(messages[2] ?? '', /parameters must be an object/);
  assert.match(messages[3] ?? '', /remove "junk"/);
  assert.match(messages[4] ?? '', /tool_call\.id must be a string of 1 to 100/);
  assert.match(messages[5] ?? '', /one block per call/);
  assert.match(messages[6] ?? '', /not closed/);
  const errors = note.diagnostics.filter((d) => d.severity === 'error');
  assert.equal(errors.length, 7);
  assert.deepEqual(
    errors.map((d) => d.callId),
    note.invalid.map((b) => b.id),
  );
  assert.deepEqual([errors[0]?.start.line, errors[0]?.start.column], [5, 31]);
  assert.equal(text.split('\n')[4]?.[30], '}');
  assert.ok(note.invalid.slice(0, -1).every((b) => /^block_[0-9a-f]{12}$/.test(b.id)));
  // The open fence at the end holds a whole call: it has the id and arguments the call gets
  // once the fence is closed.
  const closed = parseNote(`${text}\`\`\`\n`).calls.at(-1);
  assert.equal(note.invalid.at(-1)?.id, closed?.id);
  assert.match(closed?.id ?? '', /^call_/);
  assert.equal(note.invalid.at(-1)?.argsHash, hashArguments(closed?.arguments ?? {}));
});

test('a JSON error inside a quote is placed on the note line, prefixes included', () => {
  const note = parseNote(
    '> [!todo]\r\n> ```json\r\n> {"tool_call": {"name": "x",\r\n>   "parameters": {"a": 1,}}}\r\n> ```\r\n',
  );
  assert.match(note.invalid[0]?.message ?? '', /at line 4, column 27/);
});

test('duplicate explicit ids: the second call is invalid', () => {
  const block = (name: string) =>
    `\`\`\`json\n{"tool_call": {"id": "same", "name": "${name}", "parameters": {}}}\n\`\`\`\n`;
  const note = parseNote(block('first') + '\n' + block('second'));
  assert.deepEqual(
    note.calls.map((c) => c.name),
    ['first'],
  );
  assert.equal(note.invalid[0]?.name, 'second');
  assert.match(note.invalid[0]?.message ?? '', /already used/);
});

const cases: [string, string, { calls: number; invalid: number; warnings?: string[] }][] = [
  [
    'missing parameters mean no arguments',
    '```json\n{"tool_call": {"name": "git_status"}}\n```',
    { calls: 1, invalid: 0 },
  ],
  [
    'both parameters and arguments',
    '```json\n{"tool_call": {"name": "a", "parameters": {}, "arguments": {}}}\n```',
    { calls: 0, invalid: 1 },
  ],
  [
    'an unknown key in tool_call',
    '```json\n{"tool_call": {"name": "a", "params": {}}}\n```',
    { calls: 0, invalid: 1 },
  ],
  ['a top-level array', '```json\n[{"tool_call": {"name": "a"}}]\n```', { calls: 0, invalid: 1 }],
  [
    'an id of 101 characters',
    `\`\`\`json\n{"tool_call": {"name": "a", "id": "${'x'.repeat(101)}"}}\n\`\`\``,
    { calls: 0, invalid: 1 },
  ],
  ['a json block without tool_call is ignored', '```json\n{"a": 1}\n```', { calls: 0, invalid: 0 }],
  [
    'a non-json fence is ignored',
    '```text\n{"tool_call": {"name": "a"}}\n```',
    { calls: 0, invalid: 0 },
  ],
  ['indented code is ignored', '    {"tool_call": {"name": "a"}}\n', { calls: 0, invalid: 0 }],
  ['an inline mention is ignored', 'Write a `tool_call` block.', { calls: 0, invalid: 0 }],
  [
    'an unclosed fence in a quote',
    '> ```json\n> {"tool_call": {"name": "a"}}\n\nafter',
    { calls: 0, invalid: 1 },
  ],
  [
    'a call under ## Tool Results is ignored with a warning',
    '# T\n\n## Tool Results\n\n```json\n{"tool_call": {"name": "a"}}\n```\n',
    { calls: 0, invalid: 0, warnings: ['call-in-vaultd-section'] },
  ],
  [
    'a call under ## Approval is ignored with a warning',
    '## Approval\n\n- [ ] approve\n\n```json\n{"tool_call": {"name": "a"}}\n```\n',
    { calls: 0, invalid: 0, warnings: ['call-in-vaultd-section'] },
  ],
  [
    'a call under ## approval or ## tool results, in another case, is ignored too (review finding)',
    '## approval\n\n> [!question] vaultd needs a decision\n\n```json\n{"tool_call": {"name": "a"}}\n```\n\n## TOOL RESULTS\n\n```json\n{"tool_call": {"name": "b"}}\n```\n',
    { calls: 0, invalid: 0, warnings: ['call-in-vaultd-section', 'call-in-vaultd-section'] },
  ],
  [
    'a call under a new heading after the results is found',
    '## Tool Results\n\nold\n\n## Next step\n\n```json\n{"tool_call": {"name": "a"}}\n```\n',
    { calls: 1, invalid: 0 },
  ],
  [
    'a heading inside a quote does not open a vaultd section',
    '> ## Tool Results\n\n```json\n{"tool_call": {"name": "a"}}\n```\n',
    { calls: 1, invalid: 0 },
  ],
  [
    'a ### sub-heading does not end a vaultd section',
    '## Tool Results\n\n### More\n\n```json\n{"tool_call": {"name": "a"}}\n```\n',
    { calls: 0, invalid: 0, warnings: ['call-in-vaultd-section'] },
  ],
  [
    'fences inside the front-matter are not code',
    '---\nnote: |\n  ```json\n  {"tool_call": {"name": "a"}}\n  ```\n---\nbody\n',
    { calls: 0, invalid: 0 },
  ],
];

for (const [name, text, expected] of cases) {
  test(`table: ${name}`, () => {
    const note = parseNote(text);
    assert.equal(note.calls.length, expected.calls, 'calls');
    assert.equal(note.invalid.length, expected.invalid, 'invalid');
    const warnings = note.diagnostics.filter((d) => d.severity === 'warning').map((d) => d.code);
    assert.deepEqual(warnings, expected.warnings ?? []);
  });
}

test('---js front-matter is never evaluated: a diagnostic, and the calls are still found', () => {
  const text = readNote('js-front-matter.md');
  const note = parseNote(text);
  assert.equal(note.frontMatter?.lang, 'js');
  assert.deepEqual(note.data, {});
  const [d] = note.diagnostics;
  assert.equal(d?.code, 'UNSUPPORTED_FRONT_MATTER');
  assert.match(d?.message ?? '', /---js is never evaluated; use YAML/);
  assert.deepEqual(
    note.calls.map((c) => c.name),
    ['search_web'],
  );
});

test('mightHaveToolCall is false for a note without tool_call', () => {
  assert.equal(mightHaveToolCall(readNote('no-calls.md')), false);
  assert.equal(mightHaveToolCall(readNote('spec-example.md')), true);
  assert.deepEqual(parseNote(readNote('no-calls.md')).calls, []);
});

test('deep nesting is read like any other note: a call 200 quotes or list items deep is found', () => {
  const q = '>'.repeat(200);
  const quoted = parseNote(`${q} \`\`\`json\n${q} {"tool_call": {"name": "a"}}\n${q} \`\`\`\n`);
  assert.deepEqual(
    quoted.calls.map((c) => c.name),
    ['a'],
  );
  let listed = '';
  for (let i = 0; i < 200; i++) listed += `${'  '.repeat(i)}- item\n`;
  const indent = '  '.repeat(200);
  listed += `${indent}\`\`\`json\n${indent}{"tool_call": {"name": "b"}}\n${indent}\`\`\`\n`;
  assert.deepEqual(
    parseNote(listed).calls.map((c) => c.name),
    ['b'],
  );
  // Ended by its quote before any closing fence: an error, never run.
  const cut = parseNote(`${q} \`\`\`json\n${q} {"tool_call": {"name": "a"}}\n\nafter\n`);
  assert.deepEqual(cut.calls, []);
  assert.equal(cut.invalid[0]?.unclosed, true);
});

test('random and binary-ish input: read without failing, and writing results back keeps every call', () => {
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const pieces = [
    '```json\n',
    '```',
    '~~~',
    '\n',
    '\r\n',
    '\r',
    '> ',
    '- ',
    '---\n',
    '---js\n',
    '...\n',
    '+++\n',
    '{"tool_call": {"name": "a", "parameters": {}}}',
    '```json\n{"tool_call": {"name": "a", "parameters": {}}}\n```\n',
    '> ```json\n> {"tool_call": {"name": "b", "parameters": {"q": 1}}}\n> ```\n',
    '- ~~~json\n  {"tool_call": {"name": "c", "id": "x1"}}\n  ~~~\n',
    '{"tool_result": {"id": "x", "name": "a", "status": "success"}}',
    '## Tool Results\n',
    '## Approval\n',
    '\uFEFF',
    '\u0000',
    '\uD800',
    '"',
    '{',
    '}',
    '[',
    'tool_call',
    '    ',
    '\t',
    '* ',
    '1. ',
    '<!--',
    '&#96;',
  ];
  let found = 0;
  for (let i = 0; i < 2000; i++) {
    let text = '';
    const n = Math.floor(random() * 40);
    for (let j = 0; j < n; j++) {
      text +=
        random() < 0.8
          ? (pieces[Math.floor(random() * pieces.length)] ?? '')
          : String.fromCharCode(Math.floor(random() * 0x10000));
    }
    const note = parseNote(text);
    const failed = note.diagnostics.filter((d) => d.code === 'note-not-parsed');
    assert.deepEqual(failed, [], JSON.stringify(text));
    for (const call of note.calls) {
      assert.ok(call.start.offset < call.end.offset && call.end.offset <= text.length);
      assert.match(text.slice(call.start.offset, call.end.offset), /^[ \t>*+\-.\d]*(`{3,}|~{3,})/);
    }
    // Writing results back finds every call again, and every result under its call's id.
    const written = appendResults(
      text,
      note.calls.map((c) => makeResult({ id: c.id, name: c.name })),
    );
    const again = parseNote(written);
    assert.deepEqual(
      again.calls.map((c) => c.id),
      note.calls.map((c) => c.id),
      JSON.stringify(text),
    );
    for (const call of note.calls) assert.ok(again.results.has(call.id), JSON.stringify(text));
    found += note.calls.length;
  }
  assert.ok(found > 20, `only ${found} calls in the corpus`);
});

test('an invalid call keeps the id its agent gave it, unless another call has that id', () => {
  const block = (json: string) => `\`\`\`json\n${json}\n\`\`\`\n\n`;
  const note = parseNote(
    block('{"tool_call": {"name": "Bad-Name", "id": "mine-1"}}') +
      block('{"tool_call": {"name": "a", "id": "taken"}}') +
      block('{"tool_call": {"name": "a", "id": "taken", "parameters": 3}}') +
      block('{"tool_call": {"name": "a", "id": "not valid!"}}'),
  );
  assert.deepEqual(
    note.calls.map((c) => c.id),
    ['taken'],
  );
  const ids = note.invalid.map((b) => b.id);
  assert.equal(ids[0], 'mine-1');
  assert.notEqual(ids[1], 'taken');
  assert.notEqual(ids[2], 'not valid!');
  assert.equal(new Set(ids).size, 3);
});

test('parameters nested past 256 levels make the block INVALID_CALL, and the other calls are found', () => {
  // Canonical JSON, redaction, validation and the copy to the note worker are recursive: 10,000
  // levels overflowed the stack, and the whole note read as having no call at all.
  const nest = (levels: number): string => '['.repeat(levels - 1) + ']'.repeat(levels - 1);
  const block = (levels: number, text: string): string =>
    '```json\n' +
    `{"tool_call": {"name": "search_web", "parameters": {"query": "${text}", "deep": ${nest(levels)}}}}\n` +
    '```\n';
  for (const levels of [300, 10_000, 200_000]) {
    const parsed = parseNote(`${block(levels, 'deep')}\n${block(256, 'fine')}`);
    assert.deepEqual(
      parsed.calls.map((c) => c.arguments['query']),
      ['fine'],
    );
    assert.equal(parsed.invalid.length, 1);
    assert.equal(parsed.invalid[0]?.code, 'INVALID_CALL');
    assert.match(parsed.invalid[0]?.message ?? '', /nest more than 256 levels/);
  }
});
