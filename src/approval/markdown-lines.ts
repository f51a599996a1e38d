import { lineOf, readStructure } from '../note/markdown.ts';
import type { FenceBlock, HeadingBlock, NoteStructure } from '../note/structure.ts';

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
  readonly heading: LineHeading | null;
  /** Part of a top-level heading without starting it (a setext heading's underline). */
  readonly headingPart: boolean;
}

/** A top-level heading as {@link Line} has it. */
export interface LineHeading {
  readonly level: number;
  readonly text: string;
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

/** A top-level `##` section's lines: from the line after its heading up to the next heading of level 1 or 2. */
export interface SectionRange {
  readonly start: number;
  /** The first line after the section. */
  readonly end: number;
}

/**
 * A note's lines as its one structure reader ({@link readStructure}, CommonMark's block rules)
 * sees them, each looked up on its own: front-matter, fenced code, quotes, top-level headings. So
 * a heading, task box or block inside code or a quote is never taken for the real thing, and the
 * Approval section is found exactly where calls are looked for.
 *
 * Nothing is made per line until asked for. A note's Approval section is read at every look at it
 * (on arrival, at each reconcile, for the Dashboard), and an agent may write any note into the
 * pending folder: building an object for each of the note's lines, and maps of the lines of
 * every fence and heading, took 0.5 s for 1 MB of `### x` lines (bench/README.md, item 45).
 */
export class NoteLines {
  readonly #text: string;
  readonly #structure: NoteStructure;
  /** Top-level headings, in note order (the structure's are). */
  readonly #headings: HeadingBlock[];
  /** First and last line of each top-level heading and each fence, made on first use. */
  #headingLast: Int32Array | undefined;
  #fenceLast: Int32Array | undefined;
  readonly #fences = new Map<number, Fence>();
  readonly #frontMatterLines: number;
  /** Where the last lookups ended: lines are mostly asked for in order. */
  #headingAt = 0;
  #fenceAt = 0;

  /** @param text the whole note. */
  constructor(text: string) {
    this.#text = text;
    const structure = readStructure(text);
    this.#structure = structure;
    this.#headings = structure.headings.filter((h) => h.depth === 0);
    // How many lines the front-matter takes: its span ends where the first line after it starts.
    this.#frontMatterLines =
      structure.frontMatter === null ? 0 : lineOf(structure.lineStarts, structure.frontMatter.end);
  }

  /** How many lines the note has (a last line without a line ending counts; so does an empty one). */
  get count(): number {
    return this.#structure.lineStarts.length;
  }

  /**
   * A line's text without its line ending. The first line keeps a leading byte order mark.
   * @param i 0-based line.
   */
  text(i: number): string {
    const starts = this.#structure.lineStarts;
    const text = this.#text;
    const from = i === 0 ? 0 : (starts[i] as number);
    let to = starts[i + 1] ?? text.length;
    if (to > from && text.charCodeAt(to - 1) === 10) to--;
    if (to > from && text.charCodeAt(to - 1) === 13) to--;
    return text.slice(from, to);
  }

  /** @param i 0-based line. */
  quoted(i: number): boolean {
    return this.#structure.quotedLines.has(i);
  }

  /** @param i 0-based line. */
  frontMatter(i: number): boolean {
    return i < this.#frontMatterLines;
  }

  /**
   * The fenced code block line `i` opens, closes or lies inside; null outside fences.
   * @param i 0-based line.
   */
  fence(i: number): Fence | null {
    const fences = this.#structure.fences;
    const last = (this.#fenceLast ??= lastLines(this.#structure, fences));
    const k = (this.#fenceAt = findBlock(fences, i, this.#fenceAt));
    if (k < 0 || i > (last[k] as number)) return null;
    let fence = this.#fences.get(k);
    if (fence === undefined) {
      const block = fences[k] as FenceBlock;
      fence = {
        info: block.info,
        openLine: block.line,
        closeLine: block.closed ? (last[k] as number) : null,
        value: block.value,
      };
      this.#fences.set(k, fence);
    }
    return fence;
  }

  /**
   * The top-level heading line `i` starts, or null.
   * @param i 0-based line.
   */
  heading(i: number): LineHeading | null {
    const k = (this.#headingAt = findBlock(this.#headings, i, this.#headingAt));
    const heading = this.#headings[k];
    return heading !== undefined && heading.line === i ? heading : null;
  }

  /**
   * Whether line `i` is part of a top-level heading without starting it (a setext underline).
   * @param i 0-based line.
   */
  headingPart(i: number): boolean {
    const last = (this.#headingLast ??= lastLines(this.#structure, this.#headings));
    const k = (this.#headingAt = findBlock(this.#headings, i, this.#headingAt));
    const heading = this.#headings[k];
    return heading !== undefined && heading.line < i && i <= (last[k] as number);
  }

  /** Line `i` with all of the above. */
  line(i: number): Line {
    return {
      text: this.text(i),
      index: i,
      fence: this.fence(i),
      frontMatter: this.frontMatter(i),
      quoted: this.quoted(i),
      heading: this.heading(i),
      headingPart: this.headingPart(i),
    };
  }

  /**
   * The top-level `##` sections with this heading (compared without case), in note order.
   * @param title the heading's text, e.g. `Approval`.
   */
  sections(title: string): SectionRange[] {
    const wanted = title.toLowerCase();
    const headings = this.#headings;
    const sections: SectionRange[] = [];
    for (let k = 0; k < headings.length; k++) {
      const heading = headings[k] as HeadingBlock;
      if (heading.level !== 2 || heading.text.toLowerCase() !== wanted) continue;
      let next = k + 1;
      while (next < headings.length && (headings[next] as HeadingBlock).level > 2) next++;
      sections.push({
        start: heading.line + 1,
        end: next < headings.length ? (headings[next] as HeadingBlock).line : this.count,
      });
      k = next - 1;
    }
    return sections;
  }

  /**
   * The lines of the top-level headings of one level from `start` up to `end`, in note order.
   * @param level 1–6.
   * @param start first line.
   * @param end the line after the range.
   */
  *headingLines(level: number, start: number, end: number): Generator<number> {
    const headings = this.#headings;
    for (let k = Math.max(0, findBlock(headings, start, 0)); k < headings.length; k++) {
      const heading = headings[k] as HeadingBlock;
      if (heading.line >= end) return;
      if (heading.line >= start && heading.level === level) yield heading.line;
    }
  }

  /**
   * Whether a fence that is never closed has a line from `start` up to `end`.
   * @param start first line.
   * @param end the line after the range.
   */
  hasUnclosedFence(start: number, end: number): boolean {
    const fences = this.#structure.fences;
    const last = (this.#fenceLast ??= lastLines(this.#structure, fences));
    for (let k = Math.max(0, findBlock(fences, start, 0)); k < fences.length; k++) {
      const fence = fences[k] as FenceBlock;
      if (fence.line >= end) return false;
      if ((last[k] as number) >= start && !fence.closed) return true;
    }
    return false;
  }
}

/** The last line of each block: the line of its last character (its first line when empty). */
function lastLines(
  structure: NoteStructure,
  blocks: readonly { readonly start: number; readonly end: number }[],
): Int32Array {
  const last = new Int32Array(blocks.length);
  for (let k = 0; k < blocks.length; k++) {
    const block = blocks[k] as { readonly start: number; readonly end: number };
    last[k] = lineOf(structure.lineStarts, Math.max(block.start, block.end - 1));
  }
  return last;
}

/**
 * The last block (of blocks in line order) that starts at or before line `i`, -1 when none does.
 * Starts from `hint` when it fits, the block the last lookup found: lines are mostly looked up in
 * order.
 */
function findBlock(blocks: readonly { readonly line: number }[], i: number, hint: number): number {
  const at = (k: number): number => (blocks[k] as { line: number }).line;
  if (hint >= 0 && hint < blocks.length && at(hint) <= i) {
    if (hint + 1 >= blocks.length || at(hint + 1) > i) return hint;
    if (hint + 2 >= blocks.length || at(hint + 2) > i) return hint + 1;
  }
  let low = 0;
  let high = blocks.length - 1;
  if (high < 0 || at(0) > i) return -1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (at(mid) <= i) low = mid;
    else high = mid - 1;
  }
  return low;
}

/**
 * Every line of a note, as {@link NoteLines} reads each: for the commands that rewrite a note
 * line by line (`vaultd approve`).
 * @param text the whole note.
 */
export function scanLines(text: string): Line[] {
  const lines = new NoteLines(text);
  const all: Line[] = [];
  for (let i = 0; i < lines.count; i++) all.push(lines.line(i));
  return all;
}
