import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDocument, stringify } from 'yaml';
import { readFrontMatter, splitFrontMatter, updateFrontMatter } from '../../src/note/index.ts';
import { readNote, toCrlf } from './fixtures.ts';

const spans: [string, string, string | null][] = [
  ['plain ---', '---\na: 1\n---\nbody', 'yaml'],
  ['---yaml', '---yaml\na: 1\n---\n', 'yaml'],
  ['closed by ...', '---\na: 1\n...\nbody', 'yaml'],
  ['CRLF', '---\r\na: 1\r\n---\r\nbody', 'yaml'],
  ['after a BOM', '\uFEFF---\na: 1\n---\n', 'yaml'],
  ['empty', '---\n---\n', 'yaml'],
  ['---js', '---js\nx\n---\n', 'js'],
  ['---javascript', '---javascript\nx\n---\n', 'javascript'],
  ['---toml', '---toml\na = 1\n---\n', 'toml'],
  ['+++ toml', '+++\na = 1\n+++\n', 'toml'],
  ['unclosed', '---\na: 1\n', null],
  ['not at the top', '\n---\na: 1\n---\n', null],
  ['a thematic break', '----\na\n----\n', null],
];

for (const [name, text, lang] of spans) {
  test(`splitFrontMatter: ${name}`, () => {
    const span = splitFrontMatter(text);
    assert.equal(span?.lang ?? null, lang);
    if (span !== null) {
      assert.equal(span.start, text.startsWith('\uFEFF') ? 1 : 0);
      assert.match(text.slice(span.contentEnd, span.end), /^(---|\.\.\.|\+\+\+)\r?\n?$/);
    }
  });
}

test('the span bounds the YAML source exactly', () => {
  const text = '\uFEFF---\r\na: 1\r\nb: 2\r\n---\r\nbody';
  const span = splitFrontMatter(text);
  assert.equal(text.slice(span?.contentStart, span?.contentEnd), 'a: 1\r\nb: 2\r\n');
  assert.equal(text.slice(span?.end), 'body');
});

const reads: [string, string, Record<string, unknown>, string[]][] = [
  ['YAML mapping', '---\na: 1\nb: [x, y]\n---\n', { a: 1, b: ['x', 'y'] }, []],
  ['no front-matter', 'body', {}, []],
  ['empty', '---\n---\n', {}, []],
  [
    'broken YAML',
    '---\na: [1, 2\nb: : c\n---\n',
    {},
    ['invalid-front-matter', 'invalid-front-matter'],
  ],
  ['duplicate keys', '---\na: 1\na: 2\n---\n', {}, ['invalid-front-matter']],
  ['a scalar', '---\njust text\n---\n', {}, ['front-matter-not-mapping']],
  ['a sequence', '---\n- a\n---\n', {}, ['front-matter-not-mapping']],
  [
    'custom tags are not executed',
    "---\na: !!js/function 'function(){}'\n---\n",
    { a: 'function(){}' },
    ['front-matter-warning'],
  ],
  ['---js', readNote('js-front-matter.md'), {}, ['UNSUPPORTED_FRONT_MATTER']],
  ['+++ toml', '+++\na = 1\n+++\n', {}, ['UNSUPPORTED_FRONT_MATTER']],
  [
    'an alias bomb',
    '---\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n---\n',
    {},
    ['invalid-front-matter'],
  ],
];

for (const [name, text, data, codes] of reads) {
  test(`readFrontMatter: ${name}`, () => {
    const got = readFrontMatter(text);
    assert.deepEqual(got.data, data);
    assert.deepEqual(
      got.diagnostics.map((d) => d.code),
      codes,
    );
  });
}

test('a YAML error is placed on its note line', () => {
  const { diagnostics } = readFrontMatter('---\ntitle: ok\nbad: [1, 2\n---\n');
  assert.equal(diagnostics[0]?.severity, 'warning');
  assert.ok((diagnostics[0]?.start.line ?? 0) >= 3);
});

test('__proto__ in front-matter does not pollute prototypes', () => {
  const { data } = readFrontMatter('---\n__proto__: {polluted: 1}\n---\n');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.getPrototypeOf(data), Object.prototype);
});

const owned = {
  status: 'done',
  processed_at: '2026-11-21T10:00:00.000Z',
  tool_calls: 2,
  tool_errors: 0,
};

test('updating keeps comments, quoting, order, flow collections and unknown keys byte for byte', () => {
  const text = readNote('rich-front-matter.md');
  const out = updateFrontMatter(text, owned);
  const expected = text
    .replace('status: new\n', 'status: done\n')
    .replace(
      '  line two\n---',
      '  line two\nprocessed_at: 2026-11-21T10:00:00.000Z\ntool_calls: 2\ntool_errors: 0\n---',
    );
  assert.equal(out, expected);
  assert.deepEqual(readFrontMatter(out).data, { ...readFrontMatter(text).data, ...owned });
});

test('CRLF front-matter stays CRLF, and a BOM and the body survive', () => {
  const text = `\uFEFF${toCrlf(readNote('rich-front-matter.md'))}`;
  const out = updateFrontMatter(text, owned);
  assert.ok(out.startsWith('\uFEFF---\r\n# Owner: keep this comment\r\n'));
  assert.doesNotMatch(out, /[^\r]\n/);
  assert.ok(out.endsWith('---\r\nBody text stays.\r\n'));
  assert.ok(out.includes("title: 'Quoted title'   # trailing comment\r\n"));
  assert.ok(out.includes('tool_errors: 0\r\n---\r\n'));
});

test('updating twice replaces in place and is stable', () => {
  const once = updateFrontMatter(readNote('rich-front-matter.md'), owned);
  const twice = updateFrontMatter(once, { ...owned, status: 'failed', tool_errors: 1 });
  assert.equal(
    twice,
    once.replace('status: done', 'status: failed').replace('tool_errors: 0', 'tool_errors: 1'),
  );
});

const updates: [string, string, Record<string, unknown>, string][] = [
  [
    'no front-matter: one is created',
    'body\n',
    { status: 'done' },
    '---\nstatus: done\n---\nbody\n',
  ],
  [
    'no front-matter, CRLF',
    'body\r\n',
    { status: 'done' },
    '---\r\nstatus: done\r\n---\r\nbody\r\n',
  ],
  ['no front-matter, BOM', '\uFEFFbody', { status: 'done' }, '\uFEFF---\nstatus: done\n---\nbody'],
  ['empty front-matter', '---\n---\nbody', { status: 'done' }, '---\nstatus: done\n---\nbody'],
  ['comment-only front-matter', '---\n# c\n---\n', { a: 1 }, '---\n# c\na: 1\n---\n'],
  [
    'an empty value',
    '---\nstatus:\nb: 1\n---\n',
    { status: 'done' },
    '---\nstatus: done\nb: 1\n---\n',
  ],
  [
    'a value with a trailing comment',
    '---\nstatus: new # set by vaultd\n---\n',
    { status: 'done' },
    '---\nstatus: done # set by vaultd\n---\n',
  ],
  [
    'a quoted value keeps its neighbours',
    '---\na: \'x\'\nstatus: "new"\n---\n',
    { status: 'done' },
    "---\na: 'x'\nstatus: done\n---\n",
  ],
  [
    'a string that needs quotes',
    '---\nstatus: new\n---\n',
    { status: 'yes: no' },
    '---\nstatus: "yes: no"\n---\n',
  ],
  ['---js is never touched', '---js\nx()\n---\nbody', { status: 'done' }, '---js\nx()\n---\nbody'],
  ['broken YAML is never touched', '---\na: [1\n---\n', { status: 'done' }, '---\na: [1\n---\n'],
  ['a non-mapping is never touched', '---\n- a\n---\n', { status: 'done' }, '---\n- a\n---\n'],
  ['undefined values are skipped', 'x', { status: undefined }, 'x'],
  ['closed by ...', '---\na: 1\n...\nbody', { b: 2 }, '---\na: 1\nb: 2\n...\nbody'],
];

for (const [name, text, patch, expected] of updates) {
  test(`updateFrontMatter: ${name}`, () => {
    assert.equal(updateFrontMatter(text, patch), expected);
  });
}

test('a block scalar value is replaced through the Document API, comments kept', () => {
  const out = updateFrontMatter('---\n# keep\nstatus: |\n  multi\nb: 1 # note\n---\nbody', {
    status: 'done',
  });
  assert.match(out, /^---\n# keep\nstatus: done\nb: 1 # note\n---\nbody$/);
});

test('values are written as the yaml library writes them, fast path or not', () => {
  const values: unknown[] = [
    'done',
    'in_progress',
    'pending_approval',
    '2026-11-26T12:00:14.388Z',
    '2026-11-26T12:00:14Z',
    'a/b.c-d',
    '_x',
    'True',
    'TRUE',
    'tRuE',
    'false',
    'null',
    'Null',
    '~',
    'yes',
    'No',
    'x y',
    'é',
    '',
    ' lead',
    'trail ',
    'a: b',
    'a #b',
    '-x',
    '#x',
    '0x1F',
    '12',
    '1.5',
    '.inf',
    'a\nb',
    12,
    -3,
    0,
    -0,
    1.5,
    1e21,
    Number.MAX_SAFE_INTEGER + 2,
    true,
    false,
    null,
    [1, 'a'],
    { k: 1 },
  ];
  for (const value of values) {
    const out = updateFrontMatter('---\na: 1\n---\nbody\n', { v: value });
    const line = out.split('\n').find((l) => l.startsWith('v:'));
    assert.ok(line !== undefined, `no v line for ${JSON.stringify(value)}`);
    const written = line.slice(3);
    const expected =
      value !== null && typeof value === 'object'
        ? JSON.stringify(value)
        : stringify(value, { lineWidth: 0 }).replace(/\n$/, '');
    const alt = JSON.stringify(value);
    assert.ok(
      written === expected || (/[\r\n]/.test(expected) && written === alt),
      `${JSON.stringify(value)}: wrote ${written}, the yaml library writes ${expected}`,
    );
    assert.deepEqual(readFrontMatter(out).data['v'], Object.is(value, -0) ? -0 : value);
  }
});

test('front-matter the YAML library would take seconds over is refused before it is composed', () => {
  // The attacks, at the size a note is still parsed on the main thread (64 KiB): the library
  // resolves each alias by walking the document (6,000 `k: *a` lines held the thread 1.6 s), and
  // collections nested on one line (`- - - … x`, `[[[ … ]]]`) took 270–310 ms.
  const fill = (line: (i: number) => string): string => {
    let out = '';
    for (let i = 0; out.length < 60_000; i++) out += line(i);
    return out;
  };
  const attacks: [string, string, RegExp][] = [
    ['aliases', `a: &a [x, y]\n${fill((i) => `k${i}: *a\n`)}`, /more than 100 aliases/],
    ['one anchor, many uses', `a: &a x\n${fill((i) => `k${i}: *a\n`)}`, /more than 100 aliases/],
    ['a block sequence on one line', `k:\n  ${'- '.repeat(30_000)}x\n`, /more than 64 collections/],
    ['flow sequences', `k: ${'['.repeat(30_000)}${']'.repeat(30_000)}\n`, /more than 64/],
    [
      'flow maps over lines',
      `k: ${'{a: \n'.repeat(12_000)}${'}'.repeat(12_000)}\n`,
      /more than 64/,
    ],
    ['explicit keys', `${'? '.repeat(30_000)}x\n`, /more than 64 collections/],
  ];
  for (const [name, yaml, reason] of attacks) {
    const note = `---\n${yaml}---\nbody\n`;
    const read = readFrontMatter(note);
    assert.deepEqual(read.data, {}, name);
    assert.equal(read.diagnostics.length, 1, name);
    assert.equal(read.diagnostics[0]?.code, 'invalid-front-matter', name);
    assert.match(read.diagnostics[0]?.message ?? '', reason, name);
    // Never rewritten either: the note keeps what the agent wrote.
    assert.equal(updateFrontMatter(note, { status: 'done' }), note, name);
  }
  // Under the limits the library reads it as before (its own limit refuses a 100th use of one
  // anchor).
  const many = `a: &a x\nlist: [${Array.from({ length: 99 }, () => '*a').join(', ')}]\n`;
  assert.equal((readFrontMatter(`---\n${many}---\n`).data['list'] as unknown[]).length, 99);
  const nested = `k:\n  ${'- '.repeat(63)}x\n`;
  assert.deepEqual(readFrontMatter(`---\n${nested}---\n`).diagnostics, []);
  const flat = `k: {${Array.from({ length: 300 }, (_, i) => `a${i}: [${i}]`).join(', ')}}\n`;
  assert.equal(Object.keys(readFrontMatter(`---\n${flat}---\n`).data['k'] as object).length, 300);
  const tall = `${Array.from({ length: 300 }, (_, i) => `k${i}:\n  - [${i}, {b: c}]`).join('\n')}\n`;
  assert.equal(Object.keys(readFrontMatter(`---\n${tall}---\n`).data).length, 300);
});

test('front-matter over 256 KiB of YAML is refused unread; plain key: value lines of any size are read', () => {
  // 5 MB of tab-indented lines held the note worker 28 s and made 1.7 million problems.
  const tabs = '\ta: 1\n'.repeat(50_000);
  const note = `---\n${tabs}---\nbody\n`;
  const read = readFrontMatter(note);
  assert.deepEqual(read.data, {});
  assert.equal(read.diagnostics.length, 1);
  assert.match(
    read.diagnostics[0]?.message ?? '',
    /over the 256 KiB vaultd reads with a YAML library/,
  );
  assert.equal(updateFrontMatter(note, { status: 'done' }), note);
  const plain = Array.from({ length: 30_000 }, (_, i) => `k${i}: v${i}`).join('\n');
  assert.ok(plain.length > 256 * 1024);
  assert.equal(Object.keys(readFrontMatter(`---\n${plain}\n---\n`).data).length, 30_000);
});

test('thousands of YAML problems: the first 20 of each kind, and a count of the rest', () => {
  const read = readFrontMatter(`---\n${'\ta: 1\n'.repeat(5_000)}---\n`);
  assert.deepEqual(read.data, {});
  assert.equal(read.diagnostics.length, 21);
  assert.match(read.diagnostics[0]?.message ?? '', /not valid YAML: Tabs are not allowed/);
  assert.match(read.diagnostics[20]?.message ?? '', /has \d{4} more YAML problems like these/);
});

test('duplicate keys are found where the YAML library finds them, in linear time', () => {
  // vaultd checks key uniqueness itself (the library compares every key with every key before
  // it: 18,000 keys took 1.3 s); random mappings, block and flow, nested, keys from a small set.
  let state = 11;
  const r = (n: number): number => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % n;
  };
  const KEYS = ['a', 'b', '"a"', "'b'", '1', '1.0', 'true', 'null', '~', '.nan', '0x1'];
  const flow = (depth: number): string =>
    `{${Array.from({ length: 1 + r(4) }, () => `${KEYS[r(KEYS.length)]}: ${depth > 0 && r(3) === 0 ? flow(depth - 1) : 'v'}`).join(', ')}}`;
  const block = (indent: string, depth: number): string =>
    Array.from({ length: 1 + r(5) }, () => {
      const key = KEYS[r(KEYS.length)];
      if (depth > 0 && r(3) === 0) return `${indent}${key}:\n${block(`${indent}  `, depth - 1)}`;
      return `${indent}${key}: ${r(4) === 0 ? flow(1) : 'v'}`;
    }).join('\n');
  let duplicates = 0;
  for (let i = 0; i < 3_000; i++) {
    const content = `${block('', 2)}\n`;
    const library = parseDocument(content, { prettyErrors: false, uniqueKeys: true });
    const expected = library.errors
      .filter((e) => e.code === 'DUPLICATE_KEY')
      .map((e) => 4 + e.pos[0])
      .sort((x, y) => x - y);
    const ours = readFrontMatter(`---\n${content}---\n`)
      .diagnostics.filter((d) => d.message.includes('Map keys must be unique'))
      .map((d) => d.start.offset)
      .sort((x, y) => x - y);
    assert.deepEqual(ours.slice(0, 20), expected.slice(0, 20), content);
    duplicates += expected.length;
  }
  assert.ok(duplicates > 1_000, `${duplicates} duplicates met`);
  // 12,000 distinct keys with anchors, 190 KB (the library's own check took 0.6 s for them).
  const keys = Array.from({ length: 12_000 }, (_, i) => `k${i}: &a${i} v`).join('\n');
  assert.equal(Object.keys(readFrontMatter(`---\n${keys}\n---\n`).data).length, 12_000);
});
