// The fast reader of simple front-matter must read exactly what the `yaml` library reads, or give
// up: checked on random documents made of the pieces that decide YAML's reading (indicators,
// quotes, comments, numbers, keywords, flow lists, indentation, tabs, CRLF). The write-back's
// splice is checked the same way: what it writes, the library reads as the intended data.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDocument } from 'yaml';
import { splitFrontMatter, updateFrontMatter } from '../../src/note/index.ts';
import { readSimpleYaml } from '../../src/note/simple-yaml.ts';
import { seededInts as random } from '../helpers/random.ts';

const KEYS = ['title', 'tags', 'status', 'a', 'b_c', 'd-e', 'true', 'null', 'x1', '__proto__'];
const WORDS = [
  'done',
  'Bench note',
  'yes',
  'No',
  'on',
  'true',
  'False',
  'NULL',
  'null',
  '~',
  '0',
  '12',
  '015',
  '0x1F',
  '0o7',
  '1e3',
  '1.5',
  '.5',
  '.inf',
  '-1',
  '+2',
  '2026-11-26',
  '2026-11-26T12:00:14.388Z',
  'a:b',
  'a: b',
  'a #b',
  'a#b',
  'http://x.y/z?q',
  'c++',
  '@x',
  '-x',
  '- x',
  '? x',
  '&a',
  '*a',
  '!t x',
  '|',
  '>',
  '%x',
  'Café',
  'naïve',
  '中文',
  'x,y',
  '[x]',
  '{x}',
  'end:',
  'é:',
  "it's",
  'say "hi"',
  'tab\there',
  '5 apples',
  'Ω',
  '',
];

function scalar(r: (n: number) => number): string {
  const word = WORDS[r(WORDS.length)] as string;
  switch (r(6)) {
    case 0:
      return `'${word.replaceAll("'", "''")}'`;
    case 1:
      return JSON.stringify(word);
    case 2:
      return `"${word}"`;
    default:
      return word;
  }
}

function value(r: (n: number) => number): string {
  switch (r(8)) {
    case 0:
      return '';
    case 1: {
      const items = Array.from({ length: r(4) }, () => scalar(r));
      return `[${items.join(r(2) === 0 ? ', ' : ',')}]`;
    }
    case 2:
      return `${scalar(r)} # note`;
    case 3:
      return `${scalar(r)}#x`;
    default:
      return scalar(r);
  }
}

function document(seed: number): string {
  const r = random(seed);
  const eol = r(5) === 0 ? '\r\n' : '\n';
  const lines: string[] = [];
  const count = 1 + r(4);
  for (let i = 0; i < count; i++) {
    switch (r(12)) {
      case 0:
        lines.push('');
        break;
      case 1:
        lines.push(r(2) === 0 ? '# a comment' : '  # indented comment');
        break;
      case 2:
        lines.push(`  ${KEYS[r(KEYS.length)]}: ${value(r)}`);
        break;
      case 3:
        lines.push(`- ${scalar(r)}`);
        break;
      case 4:
        lines.push(`${KEYS[r(KEYS.length)]}:\t${scalar(r)}`);
        break;
      default:
        lines.push(`${KEYS[r(KEYS.length)]}:${r(6) === 0 ? '' : ' '}${value(r)}`.trimEnd());
    }
  }
  return lines.map((line) => line + eol).join('');
}

function library(content: string): { ok: boolean; data: unknown } {
  const doc = parseDocument(content, { prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0 || doc.warnings.length > 0) return { ok: false, data: undefined };
  return { ok: true, data: doc.contents === null ? {} : doc.toJS() };
}

test('the simple reader reads what the yaml library reads, or gives up', () => {
  let fast = 0;
  const total = 40_000;
  for (let seed = 1; seed <= total; seed++) {
    const content = document(seed);
    const simple = readSimpleYaml(content);
    if (simple === null) continue;
    fast++;
    const lib = library(content);
    assert.ok(lib.ok, `simple read ${JSON.stringify(content)}, which the library rejects`);
    assert.deepEqual(simple.data, lib.data, JSON.stringify(content));
  }
  // Both sides are exercised: thousands of documents are simple, most are not.
  assert.ok(fast > 3_000 && fast < total - 3_000, `${fast} of ${total} read simply`);
});

test('the positions of simple values are the values in the text', () => {
  const content = 'a: x # c\nb:\nc:   "q"  \n';
  const simple = readSimpleYaml(content);
  assert.ok(simple !== null);
  assert.deepEqual(
    simple.pairs.map((p) => content.slice(p.from, p.to)),
    ['x', '', '"q"'],
  );
});

test('a write-back to simple front-matter reads back, through the library, as intended', () => {
  const r = random(7);
  const updates: unknown[] = [
    'done',
    'in_progress',
    '2026-11-26T12:00:14.388Z',
    3,
    0,
    true,
    null,
    'a: b',
    'Café',
    "it's",
    '',
    'x #y',
    [1, 'a'],
    1.5,
    -2,
  ];
  let checked = 0;
  for (let seed = 1; seed <= 4000; seed++) {
    const content = document(seed);
    if (readSimpleYaml(content) === null) continue;
    const eol = content.includes('\r\n') ? '\r\n' : '\n';
    const note = `---${eol}${content}---${eol}body${eol}`;
    const set: Record<string, unknown> = {};
    for (let i = 0; i < 1 + r(3); i++) {
      set[['status', 'tool_calls', 'title', 'new_key', 'a'][r(5)] as string] =
        updates[r(updates.length)];
    }
    const out = updateFrontMatter(note, set);
    const span = splitFrontMatter(out);
    assert.ok(span !== null);
    const lib = library(out.slice(span.contentStart, span.contentEnd));
    assert.ok(lib.ok, JSON.stringify(out));
    const before = library(content).data as Record<string, unknown>;
    assert.deepEqual(lib.data, { ...before, ...set }, JSON.stringify({ note, set, out }));
    assert.ok(out.endsWith(`---${eol}body${eol}`));
    checked++;
  }
  assert.ok(checked > 300, `${checked} write-backs checked`);
});
