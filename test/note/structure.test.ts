// vaultd's scanner builds markdown-it's line table itself (typed columns, line ends found with
// indexOf), and the tests' reference parse is markdown-it's with one rule wrapped (whether a fence
// was closed). These tests keep them honest: the same line table and the same token stream as a
// stock markdown-it, and the structure the daemon reads equal to the reference parse's, on every
// CommonMark spec example and on random notes built from the characters that decide block
// structure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import MarkdownIt from 'markdown-it';
import type { Token } from 'markdown-it';
import {
  lineTablesForTest,
  readStructure,
  structureFromMarkdownItForTest,
  tokensForTest,
} from '../../src/note/structure.ts';
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

test('the scanner builds the same line table as markdown-it', () => {
  for (const { name, src } of inputs) {
    const { ours, markdownIt } = lineTablesForTest(src);
    assert.deepEqual(ours, markdownIt, name);
  }
});

test('the reference parse yields the same tokens as a stock markdown-it', () => {
  for (const { name, src } of inputs) {
    assert.deepEqual(tokensForTest(src).map(shape), stockTokens(src), name);
  }
});

test('the structure the daemon reads (cached, scanned) is the one markdown-it’s parse gives', () => {
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
  for (const [n, text] of notes.entries()) {
    const kept = readStructure(text);
    const every = structureFromMarkdownItForTest(text);
    assert.deepEqual(kept, every, `note ${n}: ${JSON.stringify(text.slice(0, 80))}`);
  }
});
