// vaultd's scanner builds markdown-it's line table itself (typed columns, line ends found with
// indexOf), and the tests' markdown-it parse is markdown-it's with one rule wrapped (whether a
// fence was closed). These tests keep them honest: the same line table (but for white space at the
// very end, a blank line in CommonMark and no line in markdown-it) and the same token stream as a
// stock markdown-it, and the structure the daemon reads equal to markdown-it's parse, or to
// CommonMark's reference where markdown-it departs from it, on every CommonMark spec example and
// on random notes built from the characters that decide block structure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import MarkdownIt from 'markdown-it';
import type { Token } from 'markdown-it';
import {
  lineTablesForTest,
  readStructure,
  structureFromScannerForTest,
  tokensForTest,
} from '../../src/note/structure.ts';
import { type Comparisons, assertReadsAsReference } from '../helpers/commonmark-reference.ts';
import { SPEC_EXAMPLES, randomPieces } from '../helpers/markdown-inputs.ts';

const stock = new MarkdownIt('commonmark', { html: true });

function stockTokens(src: string): unknown[] {
  const tokens: Token[] = [];
  stock.block.parse(src, stock, {}, tokens);
  return tokens.map(shape);
}

function shape(t: Token): unknown {
  return [t.type, t.tag, t.nesting, t.level, t.map, t.markup, t.info, t.content, t.attrs, t.block];
}

const inputs = [
  ...SPEC_EXAMPLES,
  ...Array.from({ length: 3000 }, (_, i) => ({
    name: `random note ${i}`,
    src: randomPieces(i + 1),
  })),
  { name: 'white space at the very end', src: 'a\n  \t ' },
  { name: 'only white space', src: ' \t ' },
  { name: 'empty', src: '' },
  { name: 'no final line ending', src: '> a\n- b' },
];

test('the scanner builds the same line table as markdown-it, and a line for white space at the end', () => {
  let trailing = 0;
  for (const { name, src } of inputs) {
    if (/(?:^|\n)[ \t]+$/.test(src)) {
      // markdown-it keeps no line for it; with a final line ending it does, and then the tables
      // are the same but for where the sentinel row starts (one character further).
      const { ours } = lineTablesForTest(src);
      const { markdownIt } = lineTablesForTest(`${src}\n`);
      const rows = (table: unknown) => {
        const t = table as Record<
          'bMarks' | 'eMarks' | 'tShift' | 'sCount' | 'bsCount',
          number[]
        > & {
          lineMax: number;
        };
        const cut = (c: ArrayLike<number>) => Array.from(c).slice(0, t.lineMax);
        return [
          cut(t.bMarks),
          cut(t.eMarks),
          cut(t.tShift),
          cut(t.sCount),
          cut(t.bsCount),
          t.lineMax,
        ];
      };
      assert.deepEqual(rows(ours), rows(markdownIt), name);
      trailing++;
      continue;
    }
    const { ours, markdownIt } = lineTablesForTest(src);
    assert.deepEqual(ours, markdownIt, name);
  }
  assert.ok(trailing > 10, `${trailing} notes ending in white space`);
});

test('the reference parse yields the same tokens as a stock markdown-it', () => {
  for (const { name, src } of inputs) {
    assert.deepEqual(tokensForTest(src).map(shape), stockTokens(src), name);
  }
});

test('the structure the daemon reads (cached, scanned) is markdown-it’s, or the reference’s where markdown-it departs', () => {
  const notes = [
    ...inputs.map((i) => i.src),
    // Headings, fences and quotes deep inside one long list.
    Array.from(
      { length: 60 },
      (_, i) =>
        `${'  '.repeat(i % 7)}- item ${i}\n${i % 5 === 0 ? `${'  '.repeat((i % 7) + 1)}## heading ${i}\n` : ''}${i % 6 === 0 ? `${'  '.repeat((i % 7) + 1)}> quoted\n${'  '.repeat((i % 7) + 1)}> \`\`\`json\n${'  '.repeat((i % 7) + 1)}> {"tool_call": {"name": "x"}}\n${'  '.repeat((i % 7) + 1)}> \`\`\`\n` : ''}`,
    ).join(''),
    '---\ntitle: t\n---\n# Top\n\n- a\n  Setext\n  ---\n- b\n\n## Tool Results\n\n> [!success] x\n> ```json\n> {}\n> ```\n',
  ];
  const counts: Comparisons = { markdownIt: 0, reference: 0, skipped: 0 };
  for (const [n, text] of notes.entries()) {
    // The daemon's reading (cached) is the scanner's.
    assert.deepEqual(readStructure(text), structureFromScannerForTest(text));
    assertReadsAsReference(text, `note ${n}`, counts);
  }
  assert.ok(counts.reference > 0 && counts.markdownIt > 2000, JSON.stringify(counts));
});
