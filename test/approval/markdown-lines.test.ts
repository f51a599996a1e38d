import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NoteLines, type Line } from '../../src/approval/markdown-lines.ts';
import { lineOf, readStructure } from '../../src/note/markdown.ts';
import { seededInts } from '../helpers/random.ts';

/**
 * Every line of a note read the plain way, as the Approval section's reader read it before it
 * looked lines up one at a time: the note split at its line endings, a map of the lines of every
 * fence and every top-level heading. The lazy reader must give the same answer for every line.
 */
function eagerLines(text: string): Line[] {
  const structure = readStructure(text);
  const fenceOf = new Map<number, Line['fence']>();
  for (const block of structure.fences) {
    const last = lineOf(structure.lineStarts, Math.max(block.start, block.end - 1));
    const fence = {
      info: block.info,
      openLine: block.line,
      closeLine: block.closed ? last : null,
      value: block.value,
    };
    for (let l = block.line; l <= last; l++) fenceOf.set(l, fence);
  }
  const frontMatterLines =
    structure.frontMatter === null ? 0 : lineOf(structure.lineStarts, structure.frontMatter.end);
  const headingAt = new Map<number, { level: number; text: string }>();
  const parts = new Set<number>();
  for (const heading of structure.headings) {
    if (heading.depth !== 0) continue;
    headingAt.set(heading.line, { level: heading.level, text: heading.text });
    const last = lineOf(structure.lineStarts, Math.max(heading.start, heading.end - 1));
    for (let l = heading.line + 1; l <= last; l++) parts.add(l);
  }
  return text.split(/\r\n|\r|\n/).map((line, index) => ({
    text: line,
    index,
    fence: fenceOf.get(index) ?? null,
    frontMatter: index < frontMatterLines,
    quoted: structure.quotedLines.has(index),
    heading: headingAt.get(index) ?? null,
    headingPart: parts.has(index),
  }));
}

const PIECES = [
  '## Approval',
  'Approval\n---',
  'Title\n===',
  '# Other',
  '### bench_echo · `call_000000000001`',
  '#### sub',
  '- [x] approve',
  '> - [x] reject',
  '> ### quoted heading',
  '- ### heading in a list',
  '```json\n{"pending_call": {}}\n```',
  '```json\n{"a": 1}',
  '~~~\n### in code\n~~~',
  '    ### indented code',
  '> ```json\n> {}\n> ```',
  '- ```json\n  {}\n  ```',
  '---',
  'text',
  '',
  '\t- [x] approve',
];

describe('NoteLines', () => {
  it('reads every line of random notes as the plain reading does, in any order', () => {
    const int = seededInts(20261127);
    for (let n = 0; n < 2000; n++) {
      const parts: string[] = [];
      if (int(5) === 0) parts.push('---\ntitle: x\n---');
      for (let k = 1 + int(20); k > 0; k--) parts.push(PIECES[int(PIECES.length)] as string);
      const eol = ['\n', '\n', '\r\n', '\r'][int(4)] as string;
      let text = parts.join(eol) + (int(2) === 0 ? eol : '');
      if (int(20) === 0) text = `\ufeff${text}`;
      const expected = eagerLines(text);
      const lines = new NoteLines(text);
      assert.equal(lines.count, expected.length, JSON.stringify(text));
      // In order, then backwards: lookups start from where the last one ended.
      const order = [...expected.keys(), ...[...expected.keys()].reverse()];
      for (const i of order) {
        const line = lines.line(i);
        const heading = line.heading && { level: line.heading.level, text: line.heading.text };
        assert.deepEqual({ ...line, heading }, expected[i], `line ${i} of ${JSON.stringify(text)}`);
      }
    }
  });

  it('finds each top-level ## section up to the next heading of level 1 or 2', () => {
    const text = [
      '# T', //  0
      '## Approval', //  1
      '### a', //  2
      '> ## Approval', //  3 (quoted: not a section)
      '#### b', //  4
      'approval', //  5
      '--------', //  6 (a setext ## Approval: ends the first, starts the second)
      '### c', //  7
      '## Tool Results', //  8
      '## APPROVAL', //  9
      '### d', // 10
    ].join('\n');
    const lines = new NoteLines(text);
    assert.deepEqual(lines.sections('Approval'), [
      { start: 2, end: 5 },
      { start: 6, end: 8 },
      { start: 10, end: 11 },
    ]);
    assert.deepEqual([...lines.headingLines(3, 2, 5)], [2]);
    assert.deepEqual([...lines.headingLines(3, 0, 11)], [2, 7, 10]);
    assert.equal(lines.hasUnclosedFence(0, 11), false);
    const open = new NoteLines('## Approval\n### a\n```json\n{}\n');
    assert.equal(open.hasUnclosedFence(1, 2), false);
    assert.equal(open.hasUnclosedFence(1, 4), true);
  });
});
