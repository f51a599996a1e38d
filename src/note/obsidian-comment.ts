import { blockTokensOf, type NoteStructure } from './structure.ts';

/**
 * Whether an Obsidian comment (`%%`) is open at `upTo`. Obsidian hides everything from a `%%`
 * that is never closed to the end of the note, so a section vaultd puts after it (the Approval
 * section, with the preview a person decides on) would not be seen, while the agent's text above
 * it is. Counts the `%%` outside the front-matter, fenced code and inline code spans, in one pass.
 * @param text the note.
 * @param structure the note's structure (its fences and front-matter).
 * @param upTo the offset where vaultd's text goes.
 */
export function isObsidianCommentOpen(
  text: string,
  structure: NoteStructure,
  upTo: number,
): boolean {
  const between = counterBetween(text, structure);
  let at = Math.min(upTo, structure.frontMatter?.end ?? 0);
  let count = 0;
  let budget = CONTAINER_BUDGET;
  let workBudget = NESTING_WORK_BUDGET;
  // A list or a quote holding a `%%` is read as CommonMark reads it, paragraph by paragraph inside
  // it: a code span never runs from one item (or quote paragraph) into the next, and the lines of
  // a paragraph inside a quote are one paragraph. Anything else, and containers past the budget
  // (markdown-it reads lazy lines under nested quotes in quadratic time), by lines as below.
  for (const block of structure.top) {
    if (block.start >= upTo) break;
    if (block.start < at || block.end > upTo || !CONTAINERS.has(block.kind)) continue;
    const segment = text.slice(block.start, block.end);
    if (!segment.includes('%%') || segment.length > budget) continue;
    const work = nestingWork(segment);
    if (work > workBudget) continue;
    budget -= segment.length;
    workBudget -= work;
    count += between(at, block.start) + countInContainer(segment);
    at = block.end;
  }
  count += between(at, upTo);
  return count % 2 === 1;
}

/** Top-level blocks whose paragraphs the lines alone do not tell apart. */
const CONTAINERS = new Set(['bullet_list', 'ordered_list', 'blockquote']);

/**
 * Characters of lists and quotes read with markdown-it for one count, at most: it reads a line
 * under deep quotes in time that grows with the depth (8 KB of lines under 500 quotes, 5 ms).
 */
const CONTAINER_BUDGET = 8 * 1024;

/**
 * Lines times the containers open around them, for at most one look: markdown-it reads each line
 * once per quote around it, lazy lines included (8 KB of lines under 1,000 quotes took 360 ms).
 * About 0.1 µs each.
 */
const NESTING_WORK_BUDGET = 50_000;

/**
 * An estimate of markdown-it's work on a list or quote: per line, the quote markers and list
 * indentation in front of it, or those of the line before for a lazy line (no markers).
 */
function nestingWork(segment: string): number {
  let work = 0;
  let open = 0;
  let depth = 0;
  let inPrefix = true;
  let spaces = 0;
  for (let i = 0; i <= segment.length; i++) {
    const c = i < segment.length ? segment.charCodeAt(i) : 10;
    if (c === 10) {
      // A blank line ends a lazy paragraph; a line's own markers set what is open.
      if (inPrefix) open = 0;
      else if (depth > 0) open = depth;
      work += 1 + Math.max(open, depth);
      depth = 0;
      spaces = 0;
      inPrefix = true;
    } else if (inPrefix) {
      if (c === 62) depth++;
      else if (c === 32) {
        if (++spaces === 2) {
          depth++;
          spaces = 0;
        }
      } else if (c === 9) depth++;
      else if (c !== 13) inPrefix = false;
    }
  }
  return work;
}

/**
 * Counts the `%%` outside fences and code spans between two offsets, by lines; the calls must go
 * forward through the note (the fences are walked once).
 */
function counterBetween(
  text: string,
  structure: NoteStructure,
): (from: number, to: number) => number {
  let next = 0;
  return (from, to) => {
    let at = from;
    let count = 0;
    const fences = structure.fences;
    // Fences come in note order; one nested in another lies inside the outer one's span.
    while (next < fences.length && (fences[next] as { end: number }).end <= at) next++;
    for (let i = next; i < fences.length; i++) {
      const fence = fences[i] as { start: number; end: number };
      if (fence.start >= to) break;
      if (fence.end <= at) continue;
      if (fence.start > at) count += countOutsideCodeSpans(text.slice(at, fence.start));
      at = Math.min(to, fence.end);
    }
    if (at < to) count += countOutsideCodeSpans(text.slice(at, to));
    return count;
  };
}

/** The `%%` of a list or quote outside code: per paragraph or heading inside it, and in HTML. */
function countInContainer(segment: string): number {
  let count = 0;
  for (const token of blockTokensOf(segment)) {
    if (token.type === 'inline') count += countInParagraph(token.content);
    else if (token.type === 'html_block') count += countPairs(token.content);
  }
  return count;
}

/**
 * The `%%` in a text outside code spans, paragraph by paragraph: a code span never runs past a
 * blank line or a heading's line (counting one across them would put vaultd's own `%%` where it
 * opens a comment instead of closing one).
 */
function countOutsideCodeSpans(segment: string): number {
  if (!segment.includes('%%')) return 0;
  let count = 0;
  let chunk: string[] = [];
  const flush = (): void => {
    if (chunk.length > 0) count += countInParagraph(chunk.join('\n'));
    chunk = [];
  };
  for (const line of segment.split(/\r\n|\r|\n/)) {
    if (line.trim() === '') flush();
    else if (/^ {0,3}#{1,6}(?:[ \t]|$)/.test(line)) {
      flush();
      count += countInParagraph(line);
    } else chunk.push(line);
  }
  flush();
  return count;
}

/**
 * The `%%` in one paragraph outside code spans: a run of backticks opens a span closed by the next
 * run of the same length (none: the run is text). The next run of each length is found
 * beforehand, so runs of many lengths that never close cost one pass, not one pass each.
 */
function countInParagraph(segment: string): number {
  if (!segment.includes('%%')) return 0;
  const runs: { start: number; end: number }[] = [];
  for (const m of segment.matchAll(/`+/g))
    runs.push({ start: m.index, end: m.index + m[0].length });
  const next: (number | undefined)[] = new Array<number | undefined>(runs.length);
  const later = new Map<number, number>();
  for (let i = runs.length - 1; i >= 0; i--) {
    const run = runs[i] as { start: number; end: number };
    next[i] = later.get(run.end - run.start);
    later.set(run.end - run.start, i);
  }
  let count = 0;
  let at = 0;
  for (let i = 0; i < runs.length;) {
    const close = next[i];
    if (close === undefined) {
      i++;
      continue;
    }
    count += countPairs(segment.slice(at, (runs[i] as { start: number }).start));
    at = (runs[close] as { end: number }).end;
    i = close + 1;
  }
  return count + countPairs(segment.slice(at));
}

function countPairs(text: string): number {
  return text.split('%%').length - 1;
}
