// markdown-it is loaded only for a note that needs it (a possible link reference definition, or a
// fence whose info string has a named character reference): loading it was 40–50 ms of every start-up.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { mayStartReference } from '../../src/note/block-scan.ts';
import { readStructure } from '../../src/note/structure.ts';

const require = createRequire(import.meta.url);
const loaded = (): boolean => Object.keys(require.cache).some((k) => k.includes('/markdown-it/'));

test('markdown-it stays unloaded until a note needs it', () => {
  const ordinary = [
    '---\ntitle: t\n---\n# Heading\n\nText with a [link](https://example.com).\n\n```json\n{"tool_call": {"name": "x"}}\n```\n',
    '[[wiki link]] at the start of a paragraph\n',
    '- [ ] a task\n- [x] done\n',
    '> [!note] A callout\n> with a body\n',
    '[label] text ]: not a definition\n',
    '[a [b]]: not one either\n',
    '~~~ json tool_call\n{}\n~~~\n',
  ];
  for (const note of ordinary) readStructure(note);
  assert.equal(loaded(), false, 'markdown-it was loaded for ordinary notes');

  // Numeric character references and backslash escapes are decoded without it.
  assert.equal(
    readStructure('```json&#32;tool\\_call\n{}\n```\n').fences[0]?.info,
    'json tool_call',
  );
  assert.equal(loaded(), false, 'markdown-it was loaded for a numeric reference');

  const info = readStructure('```json&#x20;tool&lowbar;call\n{}\n```\n');
  assert.equal(info.fences[0]?.info, 'json tool_call');
  assert.equal(loaded(), true);
});

test('mayStartReference: a necessary condition, read from the raw text', () => {
  assert.equal(mayStartReference('[a]: /u', 0), true);
  assert.equal(mayStartReference('[a\nb]: /u', 0), true);
  assert.equal(mayStartReference('> [a\n> b]: /u', 2), true);
  assert.equal(mayStartReference('[a\\]b]: /u', 0), true);
  assert.equal(mayStartReference('[a\\\nb]: /u', 0), true);
  assert.equal(mayStartReference('[a] : /u', 0), false);
  assert.equal(mayStartReference('[a [b]: /u', 0), false);
  assert.equal(mayStartReference('[a]', 0), false);
  assert.equal(mayStartReference('[a', 0), false);
  assert.equal(mayStartReference('x[a]: /u', 0), false);
});
