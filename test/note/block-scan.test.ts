// vaultd reads a note's block structure with a scanner of its own (src/note/block-scan.ts), which
// follows markdown-it's block rules and leaves link reference definitions to markdown-it's rule.
// These tests keep the two readings equal wherever markdown-it reads a note's blocks as CommonMark's
// reference implementation does, and hold the scanner to the reference where markdown-it departs
// from it (test/helpers/commonmark-reference.ts): on every CommonMark spec example and variants
// of them, on random notes built from the pieces that decide block structure, and on the bench's
// notes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  callsNote,
  listsNote,
  nestedNote,
  quotesNote,
  typicalNote,
} from '../../bench/lib/parse-fixtures.ts';
import { checkQuoteRestoresForTest } from '../../src/note/block-scan.ts';
import { parseNote } from '../../src/note/index.ts';
import {
  hrCharsForTest,
  quoteStepsForTest,
  readStructure,
  structureFromMarkdownItForTest,
  structureFromScannerForTest,
} from '../../src/note/structure.ts';
import {
  type Comparisons,
  assertReadsAsReference,
  referenceSummary,
} from '../helpers/commonmark-reference.ts';
import {
  SPEC_EXAMPLES,
  randomPieces,
  randomQuotes,
  randomStackedLines,
} from '../helpers/markdown-inputs.ts';

// The pieces of random lines: containers (a line stacks up to four) and leaves.
const CONTAINERS = ['> ', '- ', '* ', '1. ', '  ', '    ', '\t', '>', '   ', '2) '];
const LEAVES = [
  'text',
  '```json',
  '```',
  '~~~',
  '{"tool_call": {"name": "x"}}',
  '# head',
  '## Tool Results',
  '## Approval',
  'Setext',
  '===',
  '---',
  '',
  '<div>',
  '<!-- c -->',
  '***',
  '    code',
  '-',
  '1.',
  'lazy line',
  '```` ```',
  '</div>',
];

function variants(markdown: string): string[] {
  const opener = /^([ \t>*+\-.\d]*?)(`{3,}|~{3,})[^\n`]*$/gm;
  return [
    markdown.replace(opener, '$1$2json'),
    markdown.replace(/\n?$/, ''),
    markdown.replace(/\n/g, '\r\n'),
    `---\ntitle: t\n---\n${markdown}`,
    `\ufeff---\r\ntitle: t\r\n...\r\n${markdown.replace(/\n/g, '\r\n')}`,
  ];
}

const inputs = [
  ...SPEC_EXAMPLES,
  ...SPEC_EXAMPLES.flatMap(({ name, src }) =>
    variants(src).map((v, i) => ({ name: `${name}, variant ${i}`, src: v })),
  ),
  ...Array.from({ length: 4000 }, (_, i) => ({
    name: `random note ${i}`,
    src: randomPieces(i + 1),
  })),
  ...Array.from({ length: 4000 }, (_, i) => ({
    name: `random lines ${i}`,
    src: randomStackedLines(i + 1, CONTAINERS, LEAVES, 30, 5),
  })),
  ...Array.from({ length: 3000 }, (_, i) => ({
    name: `random lazy lines ${i}`,
    src: randomQuotes(i + 1, 12),
  })),
  // Lazy lines under quotes 300 deep, in runs broken by lines that end only the inner quotes,
  // and by quotes that close before the next level opens.
  {
    name: 'lazy runs under 300 quotes',
    src: `${'>'.repeat(300)} a\n${'lazy\n'.repeat(50)}      - ends the inner quotes\n${'lazy\n'.repeat(50)}`,
  },
  {
    name: 'a closed quote at every level before the next',
    src: Array.from({ length: 60 }, (_, d) => `${'> '.repeat(d + 1)}x\n${'> '.repeat(d)}\n`)
      .join('')
      .concat('lazy\n'.repeat(30)),
  },
  ...[
    typicalNote,
    callsNote,
    (b: number) => quotesNote(b, 8),
    (b: number) => listsNote(b, 40),
    (b: number) => nestedNote(b, 20),
  ].map((make, i) => ({ name: `bench note ${i}`, src: make(8 * 1024) })),
  // Deeper than markdown-it's nesting limit (1,000 levels; a list and its item are two), which
  // vaultd keeps and the reference has not.
  {
    name: '5,000 quotes deep',
    src: `${'>'.repeat(5000)} \`\`\`json\n${'>'.repeat(5000)} {"tool_call": {"name": "x"}}\n`,
    limit: true,
  },
  {
    name: 'lists 1,100 deep',
    src: `${Array.from({ length: 1100 }, (_, i) => `${'  '.repeat(i)}- item`).join('\n')}\n`,
    limit: true,
  },
  {
    name: 'lists and quotes 1,500 deep',
    src: `${Array.from({ length: 1500 }, (_, i) => `${'  '.repeat(i)}${i % 2 ? '> q' : '- l'}`).join('\n')}\n`,
    limit: true,
  },
  // The first quotes walk every line to the end but their blocks end at `y` (a lazy line after a
  // fence ends them); the runs of lazy lines they kept said nothing about the quotes that read
  // those lines next (the scanner once skipped the `>` of `>><t>` there, and lost the fence).
  {
    name: 'quotes that end early, then others over the same lines',
    src: '>>>>```\ny\n>>>d\n`\n>><t>\n>>>>~~~\n',
  },
  { name: 'white space at the very end', src: 'a\n  \t ' },
  { name: 'only white space', src: ' \t ' },
  { name: 'empty', src: '' },
  { name: 'front-matter alone, no final line ending', src: '---\ntitle: t\n---' },
  { name: 'front-matter alone, CR line endings', src: '---\rtitle: t\r---\r' },
  { name: 'front-matter then a fence', src: '---\na: 1\n---\n```json\n{}\n```' },
  { name: 'BOM', src: '\ufeff# a\n```json\n{}\n```' },
];

const counted = (): Comparisons => ({ markdownIt: 0, reference: 0, skipped: 0 });

test('the scanner reads every note as markdown-it does, or as the reference where markdown-it departs from it', () => {
  let references = 0;
  const counts = counted();
  // Block quotes keep two numbers a line and work the rest out when they end: every line put
  // back is checked against its columns kept in full.
  checkQuoteRestoresForTest(true);
  try {
    for (const input of inputs) {
      const { name, src } = input;
      const ours = assertReadsAsReference(src, name, counts, { limit: 'limit' in input });
      references += ours.top.filter((b) => b.kind === 'reference_definition').length;
    }
  } finally {
    checkQuoteRestoresForTest(false);
  }
  // The inputs hold link reference definitions at the top level, which markdown-it's own rule
  // reads for the scanner.
  assert.ok(references > 20, `${references} reference definitions`);
  // Both ways are taken, and the notes the reference reads against the spec's text are few.
  assert.ok(counts.markdownIt > 10_000, JSON.stringify(counts));
  assert.ok(counts.reference > 50, JSON.stringify(counts));
  assert.ok(counts.skipped < counts.reference, JSON.stringify(counts));
});

test('link reference definitions, and the brackets of Obsidian that are none', () => {
  const notes: [string, number][] = [
    ['> [!note] A callout\n> with a body\n\n```json\n{}\n```\n', 0],
    ['[[wiki link]] at the start of a paragraph\n', 0],
    ['[a link](https://example.com) and text\n', 0],
    ['- [ ] a task\n- [x] done\n', 0],
    ['[!tip]- folded\n', 0],
    ['[label] text ]: not a definition\n', 0],
    ['\\[escaped]: text\n', 0],
    ['[a]: /url\n```json\n{}\n```\n', 1],
    ['[a]: /url "a title\nover two lines"\n# after\n', 1],
    ['[multi\nline]: /url\n', 1],
    ['[a]: javascript:alert(1)\n', 1],
    ['[a]:\n\n/url\n', 0],
    ['[a]: /url "title" junk\n', 0],
  ];
  const counts = counted();
  for (const [note, definitions] of notes) {
    const ours = assertReadsAsReference(note, 'definition', counts);
    const found = ours.top.filter((b) => b.kind === 'reference_definition').length;
    assert.equal(found, definitions, JSON.stringify(note));
  }
  // In containers: a quote, a list item.
  for (const note of [
    '> [a]:\n> /url\n> ```json\n> {}\n> ```\n',
    '- [a\\]b]: /u\n  ```json\n  {}\n  ```\n',
  ]) {
    const ours = assertReadsAsReference(note, 'definition in a container', counts);
    assert.equal(ours.fences.length, 1, JSON.stringify(note));
  }
});

test('notes made of the characters a reference definition is read from', () => {
  // vaultd runs markdown-it's reference rule (and loads markdown-it) only where the raw text
  // passes a cheap check (mayStartReference); a check that said no to a definition markdown-it
  // reads would turn it into a paragraph. Labels over lines, in quotes and list items, with
  // escapes at line ends, brackets inside, and colons in every place.
  const pieces = [
    '[',
    ']',
    ':',
    '\\',
    ' ',
    '\n',
    '\n',
    '> ',
    '- ',
    '1. ',
    'a',
    '/u',
    '"t"',
    '<x>',
    '  ',
    '\t',
    ']:',
    '[a]:',
  ];
  let definitions = 0;
  const counts = counted();
  for (let seed = 1; seed <= 6000; seed++) {
    const note = randomPieces(seed * 7919, pieces, 44);
    const ours = assertReadsAsReference(note, `seed ${seed}`, counts);
    definitions += ours.top.filter((b) => b.kind === 'reference_definition').length;
  }
  assert.ok(definitions > 200, `${definitions} reference definitions`);
  assert.ok(counts.skipped < 600, JSON.stringify(counts));
});

test('a long note with a reference definition after many top-level blocks', () => {
  // More top-level blocks than one sweep takes, then a reference definition.
  const blocks = Array.from({ length: 300 }, (_, i) =>
    i % 3 === 0
      ? `## Heading ${i}`
      : i % 3 === 1
        ? `> quote ${i}`
        : '```json\n{"tool_call": {"name": "x"}}\n```',
  );
  const note = `${blocks.join('\n\n')}\n\n[ref]: /url\n\n> after\n`;
  const read = readStructure(note);
  assert.deepEqual(read, structureFromMarkdownItForTest(note));
  assert.equal(read.fences.length, 100);
  assert.equal(read.headings.length, 100);
  assert.equal(read.top.filter((b) => b.kind === 'reference_definition').length, 1);
});

test('lazy lines under quotes 1,000 deep are walked once, not once per quote (a hostile note)', () => {
  // The attack: one paragraph under 1,000 quotes whose lines go on without `>`. Each quote walks
  // the lines it may span; markdown-it's parse walks every lazy line once per quote (196 KB took
  // 39 s there), so the note could hold a parse until its timeout. Counted, not timed: the lines
  // the quotes walk must grow with the note, not with the note times its depth.
  const deep = '>'.repeat(1000);
  const lazy = 'a lazy line\n'.repeat(2000);
  const notes = [
    `${deep} a\n${lazy}`,
    // With a reference definition (markdown-it's own rule) and lazy runs broken up.
    `[a]: /url\n\n${deep} a\n${lazy}      - ends the inner quotes\n${lazy}`,
    `${deep} a\n${lazy}${deep} b\n${lazy}`,
  ];
  for (const note of notes) {
    const lines = note.split('\n').length;
    const steps = quoteStepsForTest(note);
    assert.ok(steps < 5 * (lines + 1000), `${steps} steps for ${lines} lines under 1,000 quotes`);
  }
  // The same reading as markdown-it's, on a smaller one (markdown-it's own parse is the slow one).
  const small = `${'>'.repeat(200)} a\n${'lazy\n'.repeat(300)}`;
  assert.deepEqual(structureFromScannerForTest(small), structureFromMarkdownItForTest(small));
});

test('a line of list markers is read in linear time (a hostile note)', () => {
  // The attack: one line of `- - - … x`, a list item nested in a list item at every marker. Each
  // item asked whether the rest of the line was a thematic break and read it to its end: 1 MB
  // took 4 s. Counted, not timed: the characters those checks read must grow with the line.
  for (const unit of ['- ', '* ', '-\t', '- * ']) {
    for (const size of [10_000, 100_000]) {
      const note = `${unit.repeat(size / unit.length)}x\n`;
      const read = hrCharsForTest(note);
      assert.ok(read < 4 * size, `${read} characters read for ${size} of ${JSON.stringify(unit)}`);
    }
  }
  // A thematic break is still one wherever a list item starts it, after markers of the other
  // kind on the same line too (the remembered stop is per marker).
  for (const note of ['- - -\n', '* - - -\n', '- * * *\n', '- * - * x\n', '- - x\n- - -\n']) {
    assert.deepEqual(structureFromScannerForTest(note), structureFromMarkdownItForTest(note), note);
    assert.ok(structureFromScannerForTest(note).top.length > 0);
  }
});

test('containers nested past the limit are read as text, and the note goes on after them', () => {
  // markdown-it's parse skipped everything after its nesting limit to the end of the container,
  // which for a list item is the end of the note: a call after a deep list was lost.
  const call = '```json\n{"tool_call": {"name": "after", "parameters": {}}}\n```\n';
  const deepLists = `${'- '.repeat(600)}x\n\n${call}`;
  const deepIndented = `${Array.from({ length: 600 }, (_, i) => `${'  '.repeat(i)}- item`).join('\n')}\n\n${call}`;
  const deepQuotes = `${'>'.repeat(1200)} x\n\n${call}`;
  const mixed = `${'> - '.repeat(400)}x\n\n${call}`;
  for (const note of [deepLists, deepIndented, deepQuotes, mixed]) {
    const parsed = parseNote(note);
    assert.deepEqual(
      parsed.calls.map((c) => c.name),
      ['after'],
      `the call after ${JSON.stringify(note.slice(0, 40))}…`,
    );
    // The fence is the reference's (commonmark.js has no limit, and reads it the same).
    const fences = structureFromScannerForTest(note).fences.map((f) => [f.lang, f.value]);
    assert.deepEqual(
      fences,
      referenceSummary(note).fences.map(([info, value]) => [info.split(/\s/)[0], value]),
    );
  }
  // A fence below the limit is text: no call there (docs/markdown.md, deliberate differences).
  const below = `${'- '.repeat(600)}\`\`\`json\n${'  '.repeat(600)}{"tool_call": {"name": "deep"}}\n${'  '.repeat(600)}\`\`\`\n`;
  assert.deepEqual(parseNote(below).calls, []);
  assert.deepEqual(parseNote(below).invalid, []);
});
