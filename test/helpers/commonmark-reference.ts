import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { Parser } from 'commonmark';
import { splitFrontMatter } from '../../src/note/front-matter.ts';
import type { NoteStructure } from '../../src/note/structure.ts';
import { readForTest, structureFromMarkdownItForTest } from '../../src/note/structure.ts';

/** One reading of a note: its structure and the link reference definitions read with it. */
export type Reading = ReturnType<typeof readForTest>;

// What CommonMark's reference implementation (commonmark.js 0.31) says about a note's blocks, in
// the terms vaultd's structure keeps, for the tests that hold vaultd's block scanner to it where
// markdown-it departs from it (docs/markdown.md lists where).

/** A note's blocks as both sides can tell them. */
export interface BlockSummary {
  /**
   * Every fenced code block: its decoded info string, its content (LF line endings), how many
   * containers (quotes, lists, list items) hold it, and the line of its opening fence (two readings
   * may find the same empty fence on different lines).
   */
  fences: [info: string, content: string, depth: number, line: number][];
  /** Every heading: its level and the line it ends on (a setext heading's underline). */
  headings: [level: number, lastLine: number][];
  /**
   * The top-level blocks other than paragraphs (the reference drops a paragraph of link reference
   * definitions only, and keeps an empty one in a case or two): their kind; for lists and quotes
   * the lines from the first to the last one with more than white space (lazy lines decide them);
   * for code, HTML and thematic breaks the first line (a heading's depends on definitions before
   * it, which the reference counts in).
   */
  top: (string | [kind: string, firstLine: number] | [kind: string, first: number, last: number])[];
  /** The lines inside block quotes at any depth, white-space lines left out. */
  quoted: number[];
  /** How many labels link reference definitions define. */
  definitions: number;
}

const REFERENCE_KINDS: Record<string, string> = {
  list: 'list',
  block_quote: 'quote',
  code_block: 'code',
  html_block: 'html',
  heading: 'heading',
  thematic_break: 'hr',
};
const VAULTD_KINDS: Record<string, string> = {
  bullet_list: 'list',
  ordered_list: 'list',
  blockquote: 'quote',
  code_block: 'code',
  fence: 'code',
  html_block: 'html',
  heading: 'heading',
  hr: 'hr',
};

/**
 * The reference's reading of `note`, read as vaultd reads it: without a BOM, with LF line
 * endings, and the front-matter's lines empty (vaultd never reads front-matter as markdown).
 * @param note the whole note.
 */
export function referenceSummary(note: string): BlockSummary {
  let text = note.charCodeAt(0) === 0xfeff ? note.slice(1) : note;
  const span = splitFrontMatter(text);
  if (span !== null) {
    const front = text.slice(0, span.end);
    const lines = front.split(/\r\n|\r|\n/).length - 1;
    text = '\n'.repeat(lines) + text.slice(span.end);
  }
  text = text.replace(/\r\n?/g, '\n');
  const parser = new Parser();
  const document = parser.parse(text);
  const fences: BlockSummary['fences'] = [];
  const headings: BlockSummary['headings'] = [];
  const inQuotes = new Set<number>();
  const walker = document.walker();
  for (let event = walker.next(); event !== null; event = walker.next()) {
    const node = event.node;
    if (!event.entering) continue;
    // An indented code block has no info string at all (`isFenced` is not exposed).
    if (node.type === 'code_block' && node.info !== null) {
      let depth = 0;
      for (let parent = node.parent; parent !== null && parent.type !== 'document';) {
        depth++;
        parent = parent.parent;
      }
      fences.push([node.info ?? '', node.literal ?? '', depth, node.sourcepos[0][0] - 1]);
    }
    if (node.type === 'heading') headings.push([node.level, node.sourcepos[1][0] - 1]);
    if (node.type === 'block_quote') {
      for (let line = node.sourcepos[0][0] - 1; line < node.sourcepos[1][0]; line++) {
        inQuotes.add(line);
      }
    }
  }
  const top: BlockSummary['top'] = [];
  const lines = text.split('\n');
  const quoted = [...inQuotes]
    .filter((line) => !/^[ \t]*$/.test(lines[line] ?? ''))
    .sort((a, b) => a - b);
  for (let node = document.firstChild; node !== null; node = node.next) {
    if (node.type === 'paragraph') continue;
    const kind = REFERENCE_KINDS[node.type] ?? node.type;
    if (kind === 'heading') {
      top.push(kind);
      continue;
    }
    if (kind !== 'list' && kind !== 'quote') {
      top.push([kind, node.sourcepos[0][0] - 1]);
      continue;
    }
    const first = node.sourcepos[0][0] - 1;
    let last = node.sourcepos[1][0] - 1;
    while (last > first && /^[ \t]*$/.test(lines[last] ?? '')) last--;
    top.push([kind, first, last]);
  }
  // commonmark.js keeps the definitions in `refmap`, which its types do not declare.
  const definitions = Object.keys((parser as unknown as { refmap: object }).refmap).length;
  return { fences, headings, top, quoted, definitions };
}

/**
 * vaultd's reading of a note, in the same terms.
 * @param reading what the scanner or markdown-it read.
 * @param note the note it read.
 */
export function summary({ structure, definitions }: Reading, note: string): BlockSummary {
  const { lineStarts } = structure;
  const lineOf = (offset: number): number => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((lineStarts[mid] as number) <= offset) low = mid;
      else high = mid - 1;
    }
    return low;
  };
  return {
    fences: structure.fences.map((f) => [f.info, f.value.replace(/\r\n?/g, '\n'), f.depth, f.line]),
    headings: structure.headings.map((h) => [h.level, lineOf(h.end)]),
    top: structure.top
      .filter((b) => b.kind !== 'paragraph' && b.kind !== 'reference_definition')
      .map((b) => {
        const kind = VAULTD_KINDS[b.kind] ?? b.kind;
        if (kind === 'list' || kind === 'quote') return [kind, b.firstLine, lineOf(b.end)];
        return kind === 'heading' ? kind : [kind, b.firstLine];
      }),
    quoted: quotedText(structure, note),
    definitions: new Set(definitions.map((d) => d.label)).size,
  };
}

/**
 * The quoted lines of a reading that hold more than white space: whether a blank line after a
 * quote is counted in it says nothing (markdown-it counts it when the quote ends there, so a
 * reading that ends the quote a line sooner, as the reference does, differs there alone).
 * @param structure a reading.
 * @param note the note it read.
 * @param lines how many lines to look at (all by default).
 */
function quotedText(structure: NoteStructure, note: string, lines?: number): number[] {
  const text = note.split(/\r\n|\r|\n/);
  return Array.from(structure.lineStarts.subarray(0, lines), (_, line) => line).filter(
    (line) => structure.quotedLines.has(line) && !/^[ \t]*$/.test(text[line] ?? ''),
  );
}

/**
 * Whether the reference reads `note` against the spec's text, which vaultd follows: commonmark.js
 * takes no tab inside a link reference definition (the spec allows spaces or tabs), so a
 * definition with one is a paragraph there, and a setext underline after it makes a heading. True
 * when vaultd reads a definition with a tab past its lines' container markers and indentation.
 * @param note the whole note.
 * @param scanned the scanner's reading of it.
 */
export function referenceTabQuirk(note: string, scanned: Reading): boolean {
  if (!note.includes('\t')) return false;
  const lines = note.split(/\r\n|\r|\n/);
  return scanned.definitions.some(({ lines: [first, end] }) =>
    lines.slice(first, end).some((line, i) => {
      // Past the container markers and indentation (list markers only where the definition
      // starts; a `>` indented four columns is text).
      const content =
        i === 0
          ? line.replace(/^[ \t>]*(?:(?:[-+*]|\d{1,9}[.)])[ \t>]+)*/, '')
          : /^ {0,3}>/.test(line)
            ? line.replace(/^[ \t>]*/, '')
            : line.replace(/^[ \t]*/, '');
      return content.includes('\t');
    }),
  );
}

/**
 * A structure with its quoted lines as the list {@link quotedText} makes, so that two readings
 * compare field by field.
 * @param structure a reading.
 * @param note the note it read.
 * @param lines how many line starts to keep (all by default).
 */
function comparable(structure: NoteStructure, note: string, lines?: number): unknown {
  const lineStarts = structure.lineStarts.slice(0, lines);
  return { ...structure, lineStarts, quotedLines: quotedText(structure, note, lines) };
}

/**
 * markdown-it's reading of `note`, as {@link comparable}. markdown-it keeps no line for white
 * space at the very end of a note, where CommonMark (and the scanner) reads a blank line; for
 * such a note it reads the note with a final line ending, whose extra line start is dropped.
 * @param note the note.
 * @param read markdown-it's reading of it as it is.
 */
function markdownItReading(note: string, read: NoteStructure): unknown {
  if (!/(?:^|[\n\r])[ \t]+$/.test(note)) return comparable(read, note);
  const structure = structureFromMarkdownItForTest(`${note}\n`);
  return comparable(structure, note, structure.lineStarts.length - 1);
}

/** How a note compared: with markdown-it, with the reference, or not at all. */
export interface Comparisons {
  markdownIt: number;
  reference: number;
  skipped: number;
}

/**
 * Assert that vaultd's scanner reads `note` as markdown-it's parse does, down to every structure
 * field, wherever markdown-it reads its blocks as the reference does; and where markdown-it
 * departs from the reference, that the scanner reads the blocks as the reference does.
 * @param note the whole note.
 * @param name what to call it in a failure.
 * @param counts tallies which way each note compared.
 * @param options `limit`: the note nests containers past the nesting limit, which vaultd and
 *   markdown-it share and the reference has not (a deliberate difference): markdown-it decides.
 * @returns the scanner's structure of the note.
 */
export function assertReadsAsReference(
  note: string,
  name: string,
  counts: Comparisons,
  options: { limit?: boolean } = {},
): NoteStructure {
  const scanned = readForTest(note, 'scanner');
  const markdownIt = readForTest(note, 'markdown-it');
  const ours = comparable(scanned.structure, note);
  const theirs = (): unknown => markdownItReading(note, markdownIt.structure);
  if (options.limit === true) {
    assert.deepEqual(ours, theirs(), `${name}: ${JSON.stringify(note)}`);
    counts.markdownIt++;
    return scanned.structure;
  }
  const reference = referenceSummary(note);
  if (isDeepStrictEqual(summary(markdownIt, note), reference)) {
    assert.deepEqual(ours, theirs(), `${name}: ${JSON.stringify(note)}`);
    counts.markdownIt++;
  } else if (referenceTabQuirk(note, scanned)) {
    counts.skipped++;
  } else {
    assert.deepEqual(
      summary(scanned, note),
      reference,
      `${name} (markdown-it departs): ${JSON.stringify(note)}`,
    );
    counts.reference++;
  }
  return scanned.structure;
}
