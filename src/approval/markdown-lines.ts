import { lineOf, readStructure } from '../note/markdown.ts';

/** One line of a note, with its place in the note's block structure. */
export interface Line {
  /** The line's text without its line ending (a trailing `\r` is dropped). */
  readonly text: string;
  /** 0-based line number. */
  readonly index: number;
  /** The fenced code block this line opens, closes or lies inside; null outside fences. */
  readonly fence: Fence | null;
  /** True for the lines of front-matter at the very start of the note. */
  readonly frontMatter: boolean;
  /** Inside a block quote or callout. */
  readonly quoted: boolean;
  /** The top-level heading this line starts, or null. */
  readonly heading: { readonly level: number; readonly text: string } | null;
  /** Part of a top-level heading without starting it (a setext heading's underline). */
  readonly headingPart: boolean;
}

/** A fenced code block. */
export interface Fence {
  /** The info string of the opening fence, decoded and trimmed. */
  readonly info: string;
  readonly openLine: number;
  /** Line of the closing fence; null when the fence is never closed. */
  readonly closeLine: number | null;
  /** The literal content. */
  readonly value: string;
}

/**
 * Split a note into lines (LF, CRLF or CR) and mark each with what the note's one structure reader
 * ({@link readStructure}, CommonMark's block rules) says of it: front-matter, fenced code, quotes,
 * top-level headings. So a heading, task box or block inside code or a quote is never taken for
 * the real thing, and the Approval section is found exactly where calls are looked for.
 * @param text the whole note.
 */
export function scanLines(text: string): Line[] {
  const structure = readStructure(text);
  const texts = text.split(/\r\n|\r|\n/);
  const fenceOf = new Map<number, Fence>();
  for (const block of structure.fences) {
    const lastLine = lineOf(structure.lineStarts, Math.max(block.start, block.end - 1));
    const fence: Fence = {
      info: block.info,
      openLine: block.line,
      closeLine: block.closed ? lastLine : null,
      value: block.value,
    };
    for (let l = block.line; l <= lastLine; l++) fenceOf.set(l, fence);
  }
  // How many lines the front-matter takes: its span ends where the first line after it starts.
  const frontMatterLines =
    structure.frontMatter === null ? 0 : lineOf(structure.lineStarts, structure.frontMatter.end);
  const headingAt = new Map<number, { level: number; text: string }>();
  const headingParts = new Set<number>();
  for (const heading of structure.headings) {
    if (heading.depth !== 0) continue;
    headingAt.set(heading.line, { level: heading.level, text: heading.text });
    const last = lineOf(structure.lineStarts, Math.max(heading.start, heading.end - 1));
    for (let l = heading.line + 1; l <= last; l++) headingParts.add(l);
  }
  return texts.map((line, index) => ({
    text: line,
    index,
    fence: fenceOf.get(index) ?? null,
    frontMatter: index < frontMatterLines,
    quoted: structure.quotedLines.has(index),
    heading: headingAt.get(index) ?? null,
    headingPart: headingParts.has(index),
  }));
}
