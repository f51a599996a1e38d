// Places in files (`data.places`, as the lsp tools give them) render as wiki links in the callout;
// nothing a tool controls can make a link to anything else or open markup.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderResult } from '../../src/note/render-result.ts';
import { makeResult } from './results.ts';

const callout = (md: string): string[] => md.slice(0, md.indexOf('\n\n````')).split('\n');

test('each place is a wiki link to its file, with line and column, its label and source line', () => {
  const md = renderResult(
    makeResult({
      name: 'diagnostics',
      content: '1 error, 0 warnings in code/src/main.ts\n\ncode/src/main.ts:4:14: error …',
      data: {
        places: [
          {
            path: 'code/src/main.ts',
            line: 4,
            column: 14,
            label: "error typescript 2322: Type 'string' is not assignable to type 'number'.",
            text: "export const label: number = 'not a number';",
          },
          { path: 'notes/Ünïcødé café.ts', line: 1 },
        ],
      },
    }),
  );
  assert.deepEqual(callout(md).slice(1, 5), [
    '> 1 error, 0 warnings in code/src/main.ts',
    "> - [[code/src/main.ts|code/src/main.ts:4:14]] error typescript 2322: Type 'string' is not assignable to type 'number'.",
    ">   export const label: number = 'not a number';",
    '> - [[notes/Ünïcødé café.ts|notes/Ünïcødé café.ts:1]]',
  ]);
});

test('a path that could break out of a wiki link, or leave the vault, is shown as text', () => {
  const hostile = [
    'a]] [[Secret',
    'a|alias',
    'a#heading',
    'a^block',
    '../outside.ts',
    'x/../../y.ts',
    '/etc/passwd',
    'a%%comment%%',
    'a`code`',
    'a\nb',
  ];
  const md = renderResult(
    makeResult({
      content: 'places',
      data: { places: hostile.map((path) => ({ path, line: 1, label: '[[Evil]] #tag <b>x</b>' })) },
    }),
  );
  const body = callout(md).filter((l) => l.startsWith('> - '));
  assert.equal(body.length, hostile.length);
  for (const line of body) {
    assert.ok(!line.includes('[['), `no link opened: ${line}`);
    assert.ok(!/(?<!\\)[#<]/.test(line), `markup escaped: ${line}`);
  }
});

test('at most 30 places are shown; the rest are in the JSON block', () => {
  const places = Array.from({ length: 35 }, (_, i) => ({ path: 'a.ts', line: i + 1, column: 1 }));
  const md = renderResult(makeResult({ content: 'many', data: { places } }));
  assert.equal(callout(md).filter((l) => l.startsWith('> - [[a.ts|')).length, 30);
  assert.match(md, /\*\(5 more in the JSON block below\)\*/);
});

test('data that is not a list of places renders the content as before', () => {
  const md = renderResult(makeResult({ content: 'plain', data: { places: [{ line: 1 }] } }));
  assert.match(md, /^> plain$/m);
});
