// The placer turns offsets into lines and columns. It starts from the line it found last (calls
// are placed in note order), so it is checked against a plain count of line endings in every
// order of offsets: forward, backward, random, and near each line ending.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makePlacer } from '../../src/note/places.ts';
import type { Place } from '../../src/note/types.ts';

/** The place of `offset` by counting line endings from the start (\r\n, \n, lone \r). */
function placeByCount(text: string, offset: number): Place {
  const at = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < at; i++) {
    const c = text.charCodeAt(i);
    if (c === 13 && text.charCodeAt(i + 1) === 10) {
      if (i + 1 >= at) break;
      i++;
    }
    if (c === 10 || c === 13) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: at - lineStart + 1, offset: at };
}

function randomText(random: () => number, length: number): string {
  const pieces = ['a', 'bc', ' ', '\n', '\r\n', '\r', '\n\n', 'line of text'];
  let text = '';
  while (text.length < length) text += pieces[Math.floor(random() * pieces.length)];
  return text;
}

function lcg(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

test('places match a count of line endings for offsets in any order', () => {
  const random = lcg(7);
  for (let round = 0; round < 60; round++) {
    const text = randomText(random, 1 + Math.floor(random() * 400));
    const all = Array.from({ length: text.length + 3 }, (_, i) => i - 1);
    const orders = [
      all,
      [...all].reverse(),
      all.map(() => Math.floor(random() * (text.length + 4)) - 2),
      // Far jumps forward, past the few lines the placer steps through before searching.
      all.filter((_, i) => i % 37 === 0),
    ];
    for (const offsets of orders) {
      const place = makePlacer(text);
      for (const offset of offsets)
        assert.deepEqual(
          place(offset),
          placeByCount(text, offset),
          `offset ${offset} of ${JSON.stringify(text)}`,
        );
    }
  }
});
