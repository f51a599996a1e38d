import type { NoteStructure, TopBlock } from './structure.ts';

export { lineOf } from './places.ts';
export { readStructure } from './structure.ts';
export type { FenceBlock, HeadingBlock, NoteStructure, TopBlock } from './structure.ts';

/** Level-2 headings whose sections vaultd writes and never scans for calls. */
export const OWNED_HEADINGS: readonly string[] = ['Tool Results', 'Approval'];
const OWNED_LOWER = new Set(OWNED_HEADINGS.map((h) => h.toLowerCase()));

/**
 * Offset ranges of vaultd's own sections: from a top-level `## Tool Results` or `## Approval`
 * heading (ATX or setext, in any case, as the section reader and writer compare them) up to the
 * next top-level level-1/2 heading that is not one of those, or the end of the note. Compared
 * with case, a call under `## approval` was a call here while the writer took that section, the
 * call block in it, for vaultd's own and replaced it (review finding).
 * @param structure the note's structure ({@link readStructure}).
 * @param length length of the note's text.
 */
export function findOwnedRanges(structure: NoteStructure, length: number): [number, number][] {
  const ranges: [number, number][] = [];
  let open: number | null = null;
  for (const heading of structure.headings) {
    if (heading.depth !== 0 || heading.level > 2) continue;
    const owned = heading.level === 2 && OWNED_LOWER.has(heading.text.toLowerCase());
    if (owned && open === null) open = heading.start;
    if (!owned && open !== null) {
      ranges.push([open, heading.start]);
      open = null;
    }
  }
  if (open !== null) ranges.push([open, length]);
  return ranges;
}

/** A level-2 section at the top level of a note. */
export interface SectionSpan {
  /** Offset of the heading. */
  readonly start: number;
  /** Offset just after the heading's text. */
  readonly headingEnd: number;
  /** Offset just after the last block of the section (the heading's end when it is empty). */
  readonly contentEnd: number;
  /** Offset of the next top-level level-1/2 heading, or the text's length. */
  readonly end: number;
  /** The section's top-level blocks after the heading. */
  readonly blocks: readonly TopBlock[];
  /** Whether the section's last block is the note's last block. */
  readonly last: boolean;
}

/**
 * Finds the first top-level level-2 section whose heading text is exactly `heading` (and that
 * `accept` takes, when given).
 * @param structure the note's structure ({@link readStructure}).
 * @param heading the heading's text, without `## `.
 * @param length length of the note's text.
 * @param accept whether a section of that heading is the one looked for.
 * @param ignoreCase whether `## approval` is a section `Approval` too.
 */
export function findSection(
  structure: NoteStructure,
  heading: string,
  length: number,
  accept?: (section: SectionSpan) => boolean,
  ignoreCase = false,
): SectionSpan | null {
  const top = structure.top;
  const wanted = ignoreCase ? heading.toLowerCase() : heading;
  for (let index = 0; index < top.length; index++) {
    const head = top[index] as TopBlock;
    if (head.heading?.level !== 2) continue;
    const text = ignoreCase ? head.heading.text.toLowerCase() : head.heading.text;
    if (text !== wanted) continue;
    const blocks: TopBlock[] = [];
    let end = length;
    let last = true;
    for (let i = index + 1; i < top.length; i++) {
      const block = top[i] as TopBlock;
      if (block.heading !== undefined && block.heading.level <= 2) {
        end = block.start;
        last = false;
        break;
      }
      blocks.push(block);
    }
    const contentEnd = blocks.at(-1)?.end ?? head.end;
    const section = { start: head.start, headingEnd: head.end, contentEnd, end, blocks, last };
    if (accept === undefined || accept(section)) return section;
  }
  return null;
}
