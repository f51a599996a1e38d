import { createRequire } from 'node:module';
import { seededInts } from './random.ts';

// Inputs for the tests that hold vaultd's block scanner to markdown-it: CommonMark's spec examples
// and random notes made of the pieces that decide block structure.

const require = createRequire(import.meta.url);
const spec = require('commonmark-spec') as { tests: { markdown: string; number: number }[] };

/** Every CommonMark spec example, its tabs written as tabs (the spec shows them as `→`). */
export const SPEC_EXAMPLES: readonly { name: string; src: string }[] = spec.tests.map((t) => ({
  name: `spec example ${t.number}`,
  src: t.markdown.replace(/→/g, '\t'),
}));

// Pieces of lines: container markers, indentation, fences, headings, underlines, HTML of every
// kind, thematic breaks, tabs, text, and the characters a reference definition starts with.
export const BLOCK_PIECES = [
  ' ',
  '  ',
  '   ',
  '    ',
  '\t',
  ' \t',
  '\n',
  '\n',
  '\n\n',
  '> ',
  '>',
  '>\t',
  '> > ',
  '- ',
  '-',
  '* ',
  '+ ',
  '1. ',
  '2) ',
  '10. ',
  '1.',
  '-\t',
  '   - ',
  '  1. ',
  '```',
  '~~~',
  '````',
  '```json',
  '~~~ json tool_call',
  '``` `x`',
  '   ```',
  'text',
  'more text',
  '#',
  '# h',
  '###### h6',
  '####### x',
  '## h ##',
  '#\t',
  '===',
  '---',
  '- - -',
  '***',
  '___',
  '* * *',
  '<div>',
  '</div>',
  '<!--',
  '-->',
  '<?',
  '?>',
  '<!X',
  '>',
  '<![CDATA[',
  ']]>',
  '<script>',
  '</script>',
  '<pre',
  '<a href="x">',
  '</span>',
  '<x-y z=1/>',
  '<DIV class="a">',
  '[a]: /u',
  '[[wiki]]',
  '[!note] t',
  '[a]',
  '\\',
  '&#32;',
  'tool_call',
  '{"x": 1}',
  '\u00a0',
  '\u3000',
];

/**
 * A random note: 1 to `most` pieces drawn from `pieces`, repeatable by `seed`.
 * @param seed the seed.
 * @param pieces what to draw from; the pieces of block structure by default.
 * @param most the most pieces.
 */
export function randomPieces(
  seed: number,
  pieces: readonly string[] = BLOCK_PIECES,
  most = 60,
): string {
  const next = seededInts(seed);
  let out = '';
  const length = 1 + next(most);
  for (let i = 0; i < length; i++) out += pieces[next(pieces.length)];
  return out;
}
