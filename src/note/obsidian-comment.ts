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
  const frontMatter = structure.frontMatter;
  let at = Math.min(upTo, frontMatter?.end ?? 0);
  // Front-matter Obsidian does not take for properties (closed by `...`, opened by `---yaml` or
  // `+++`) is shown as markdown there: its `%%` count. An agent's YAML block scalar holding a
  // look-alike Approval section and a `%%`, closed by `...`, hid vaultd's real section behind it
  // (review finding).
  let count =
    frontMatter !== null && !obsidianProperties(text, frontMatter)
      ? countPairs(text.slice(frontMatter.start, at))
      : 0;
  let budget = CONTAINER_BUDGET;
  let workBudget = NESTING_WORK_BUDGET;
  // Each top-level block holding a `%%` is counted on its own: a code span never runs from one
  // block into the next (a setext underline, a thematic break, an HTML block or a definition ends
  // a paragraph as a blank line does), and indented code is code. A list or a quote is read as
  // CommonMark reads it, paragraph by paragraph inside it: a code span never runs from one item
  // (or quote paragraph) into the next, and the lines of a paragraph inside a quote are one
  // paragraph. Containers past the budgets (markdown-it's time grows with quote depth), blocks cut
  // by `upTo` and the text between blocks are counted by lines, as below.
  for (const block of structure.top) {
    if (block.start >= upTo) break;
    if (block.start < at || block.end > upTo) continue;
    const segment = text.slice(block.start, block.end);
    if (!segment.includes('%%')) continue;
    let exact: number;
    if (block.kind === 'fence' || block.kind === 'code_block') exact = 0;
    else if (block.kind === 'html_block') exact = countPairs(segment);
    else if (!CONTAINERS.has(block.kind)) exact = countInParagraph(segment);
    else {
      if (segment.length > budget) continue;
      const work = nestingWork(segment);
      if (work > workBudget) continue;
      budget -= segment.length;
      workBudget -= work;
      exact = countInContainer(segment);
    }
    count += between(at, block.start) + exact;
    at = block.end;
  }
  count += between(at, upTo);
  return count % 2 === 1;
}

/**
 * Whether front-matter is of the one form Obsidian shows as properties: a line `---` opening it
 * and a line `---` closing it (blanks after either allowed).
 */
function obsidianProperties(
  text: string,
  span: { start: number; contentStart: number; contentEnd: number; end: number },
): boolean {
  const dashes = /^---[ \t]*(?:\r\n|\r|\n)?$/;
  return (
    dashes.test(text.slice(span.start, span.contentStart)) &&
    dashes.test(text.slice(span.contentEnd, span.end))
  );
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
 * blank line (a line of quote markers alone included), a list item's start or a heading's line
 * (counting one across them would put vaultd's own `%%` where it opens a comment instead of
 * closing one).
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
    // A line of quote markers alone is a blank line inside the quote.
    if (/^[ \t>]*$/.test(line)) flush();
    else if (/^ {0,3}#{1,6}(?:[ \t]|$)/.test(line)) {
      flush();
      count += countInParagraph(line);
    } else {
      // A list item starts a paragraph of its own.
      if (/^[ \t>]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)/.test(line)) flush();
      chunk.push(line);
    }
  }
  flush();
  return count;
}

/**
 * The `%%` in one paragraph outside code spans, raw HTML and autolinks, read left to right as
 * CommonMark does: whichever of a code span, an HTML tag (or comment, declaration…) and an
 * autolink starts first wins; a backtick run opens a span closed by the next run of the same
 * length (none: the run is text), and a backslash before a run takes its first backtick out of the
 * opener (a closer needs none of that). The runs of each length are listed beforehand, so runs of
 * many lengths that never close cost one pass, not one pass each.
 */
function countInParagraph(segment: string): number {
  if (!segment.includes('%%')) return 0;
  const runs: { start: number; end: number }[] = [];
  for (const m of segment.matchAll(/`+/g))
    runs.push({ start: m.index, end: m.index + m[0].length });
  // For each length, the indices of the runs of that length, in order.
  const byLength = new Map<number, number[]>();
  for (const [i, run] of runs.entries()) {
    const length = run.end - run.start;
    let list = byLength.get(length);
    if (list === undefined) byLength.set(length, (list = []));
    list.push(i);
  }
  const closerAfter = (i: number, length: number): number | undefined => {
    const list = byLength.get(length);
    if (list === undefined) return undefined;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((list[mid] as number) <= i) lo = mid + 1;
      else hi = mid;
    }
    return list[lo];
  };
  let count = 0;
  let text = 0; // where the text not yet counted starts
  let pos = 0;
  let i = 0; // the first run at or after pos
  let lt = segment.indexOf('<');
  for (;;) {
    while (i < runs.length && (runs[i] as { start: number }).start < pos) i++;
    const run = runs[i];
    // The next `<` is looked for again only once passed: one scan of the paragraph in all.
    if (lt >= 0 && lt < pos) lt = segment.indexOf('<', pos);
    if (lt >= 0 && (run === undefined || lt < run.start)) {
      const end = rawEnd(segment, lt);
      if (end === undefined) {
        pos = lt + 1;
        continue;
      }
      count += countPairs(segment.slice(text, lt));
      text = pos = end;
      continue;
    }
    if (run === undefined) break;
    let slashes = 0;
    while (segment.charCodeAt(run.start - 1 - slashes) === 92) slashes++;
    const opener = run.end - run.start - (slashes % 2);
    const close = opener === 0 ? undefined : closerAfter(i, opener);
    if (close === undefined) {
      pos = run.end;
      continue;
    }
    count += countPairs(segment.slice(text, run.start));
    text = pos = (runs[close] as { end: number }).end;
  }
  return count + countPairs(segment.slice(text));
}

// CommonMark's raw HTML and autolinks (spec 0.31, sections 6.5 and 6.6), matched at a `<`.
const WS = '[ \\t\\r\\n]';
const ATTRIBUTE = `(?:${WS}+[A-Za-z_:][A-Za-z0-9_.:-]*(?:${WS}*=${WS}*(?:[^"'=<>\`\\u0000-\\u0020]+|'[^']*'|"[^"]*"))?)`;
const RAW = new RegExp(
  [
    `<[A-Za-z][A-Za-z0-9-]*${ATTRIBUTE}*${WS}*/?>`,
    `</[A-Za-z][A-Za-z0-9-]*${WS}*>`,
    '<!-->',
    '<!--->',
    '<!--[\\s\\S]*?-->',
    '<\\?[\\s\\S]*?\\?>',
    '<![A-Za-z][^>]*>',
    '<!\\[CDATA\\[[\\s\\S]*?\\]\\]>',
    '<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\\u0000-\\u0020]*>',
    "<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*>",
  ].join('|'),
  'y',
);

/**
 * Characters a piece of raw HTML or an autolink may take to be seen as one here: every `<` is
 * tried, and one that opens a comment or a quoted attribute never closed would otherwise be
 * scanned to the end of the paragraph each time (quadratic in a paragraph of `<!--`).
 */
const RAW_WINDOW = 256;

/** The end of the raw HTML or autolink starting at `at` (a `<`), or undefined when none does. */
function rawEnd(segment: string, at: number): number | undefined {
  const next = segment.charCodeAt(at + 1);
  // A letter, `/`, `!` or `?` after the `<`, or nothing starts there.
  if (!((next | 32) >= 97 && (next | 32) <= 122) && next !== 47 && next !== 33 && next !== 63)
    return undefined;
  RAW.lastIndex = 0;
  const match = RAW.exec(segment.slice(at, at + RAW_WINDOW));
  return match === null ? undefined : at + match[0].length;
}

function countPairs(text: string): number {
  return text.split('%%').length - 1;
}
