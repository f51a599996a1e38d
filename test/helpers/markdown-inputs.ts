import { createRequire } from 'node:module';
import { seededInts } from './random.ts';

// Inputs for the tests that hold vaultd's block scanner to markdown-it and to CommonMark's
// reference: CommonMark's spec examples and random notes made of the pieces that decide block
// structure.

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

/**
 * A note of whole lines, each a random stack of container markers and one leaf.
 * @param seed the seed.
 * @param containers the markers (and indentation) a line may start with.
 * @param leaves what follows them.
 * @param most the most lines; a line has up to `depth - 1` markers.
 * @param depth see `most`.
 */
export function randomStackedLines(
  seed: number,
  containers: readonly string[],
  leaves: readonly string[],
  most: number,
  depth: number,
): string {
  const next = seededInts(seed);
  const lines: string[] = [];
  const count = 1 + next(most);
  for (let i = 0; i < count; i++) {
    let line = '';
    const markers = next(depth);
    for (let d = 0; d < markers; d++) line += containers[next(containers.length)];
    lines.push(line + leaves[next(leaves.length)]);
  }
  // The last line has no line ending in a quarter of the notes.
  return lines.join('\n') + (next(4) === 0 ? '' : '\n');
}

/**
 * A note of quotes nested up to `depth` deep (indented, with a space, a tab, two spaces or nothing
 * after each `>`) and the lines between them: lazy lines, which the scanner reads once for all
 * the quotes inside the one that made them lazy (the lazy runs it keeps), lines that end a quote,
 * blank lines, and list items holding quotes.
 * @param seed the seed.
 * @param depth the deepest quote.
 */
export function randomQuotes(seed: number, depth: number): string {
  const next = seededInts(seed);
  const between = [
    'lazy text',
    'more lazy',
    '      - indented item',
    '     1. indented',
    '    code?',
    '- item',
    '```',
    '```json',
    '    ```',
    '# heading',
    '***',
    '<div>',
    '<t>',
    '  > outdented quote',
    '===',
    '---',
    'a\tb',
    '\t> x',
    '[a]: /u',
    '2) x',
  ];
  const lines: string[] = [];
  const count = 2 + next(40);
  for (let i = 0; i < count; i++) {
    const kind = next(10);
    if (kind < 4) {
      const marker = `>${['', ' ', '\t', '  ', ' '][next(5)]}`;
      const leaf = [`quoted ${i}`, '```', '~~~', '- x', '[a]: /u', '<t>', ''][next(7)];
      lines.push(`${' '.repeat(next(5))}${marker.repeat(1 + next(depth))}${leaf}`);
    } else if (kind < 8) {
      lines.push(between[next(between.length)] as string);
    } else if (kind === 8) {
      lines.push('');
    } else {
      const item = ['- ', '1. ', '* ', '-\t', '10) '][next(5)];
      const leaf = [`in a list ${i}`, '```', '~~~json', '[a]: /u', ''][next(5)];
      lines.push(`${'  '.repeat(next(3))}${item}${'> '.repeat(next(7))}${leaf}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
