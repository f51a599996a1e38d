import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { escapeMarkdownLine, longestBacktickRun } from '../../src/note/escape.ts';
import { seededRandom } from '../helpers/random.ts';

// escapeMarkdownLine returns a line that needs nothing as it is, after one test; every other line
// goes through the replacements. The replacements are the definition: the two must agree on
// every line.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;
function reference(line: string): string {
  const text = line
    .replace(CONTROL, '')
    .replace(/[\r\n\t]/g, ' ')
    .trimStart()
    .replace(/[\\`*_[\]<>~|$%&#]/g, (c) => `\\${c}`);
  return text.replace(/^([-+=])/, '\\$1').replace(/^(\d{1,9})([.)])/, '$1\\$2');
}

// Plain letters most of the time, so that many lines need nothing; then every character either
// side of the test's classes.
const PIECES = [
  'a',
  'word ',
  'x',
  ' ',
  '\t',
  '\n',
  '\r',
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u00a0',
  '\u2028',
  '\u3000',
  '\ufeff',
  '-',
  '+',
  '=',
  '.',
  ')',
  '(',
  '1',
  '123456789',
  '0',
  '\\',
  '`',
  '*',
  '_',
  '[',
  ']',
  '<',
  '>',
  '~',
  '|',
  '$',
  '%',
  '&',
  '#',
  '!',
  '"',
  "'",
  ':',
  'é',
  '\u{1f600}',
];

describe('escapeMarkdownLine', () => {
  it('agrees with the replacements on 50,000 random lines, returning plain lines as they are', () => {
    const next = seededRandom(37);
    let unchanged = 0;
    for (let i = 0; i < 50_000; i++) {
      const length = Math.floor(next() * 12);
      let line = '';
      for (let k = 0; k < length; k++) {
        line += next() < 0.6 ? 'abc ' : PIECES[Math.floor(next() * PIECES.length)];
      }
      const expected = reference(line);
      assert.equal(escapeMarkdownLine(line), expected, JSON.stringify(line));
      if (expected === line) unchanged += 1;
    }
    // Both ways are taken.
    assert.ok(unchanged > 5_000 && unchanged < 45_000, `${unchanged} lines unchanged`);
  });

  it('escapes the markers at the start of a line only', () => {
    assert.equal(escapeMarkdownLine('- item'), '\\- item');
    assert.equal(escapeMarkdownLine('a - b'), 'a - b');
    assert.equal(escapeMarkdownLine('12. x'), '12\\. x');
    assert.equal(escapeMarkdownLine('1234567890. x'), '1234567890. x');
    assert.equal(escapeMarkdownLine('\u00a0# title'), '\\# title');
  });
});

test('longestBacktickRun: the longest run, by one scan', () => {
  assert.equal(longestBacktickRun(''), 0);
  assert.equal(longestBacktickRun('no ticks'), 0);
  assert.equal(longestBacktickRun('a`b``c```'), 3);
  assert.equal(longestBacktickRun('````x`'), 4);
  assert.equal(longestBacktickRun('`x'.repeat(200_000)), 1);
});
