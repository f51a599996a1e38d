import type { ToolResult } from '../protocol/types.ts';
import { findSection, readStructure } from './markdown.ts';
import type { NoteStructure, SectionSpan } from './markdown.ts';
import { isObsidianCommentOpen } from './obsidian-comment.ts';
import { detectLineEnding, normalizeLineEndings } from './places.ts';
import { renderResult } from './render-result.ts';

/** The heading of the section that holds results. */
export const RESULTS_HEADING = 'Tool Results';

const CALLOUT_START = /^>[ \t]?\[!(?:success|failure|warning)\]/;

/**
 * Writes results under the note's `## Tool Results` heading, creating it at the end of the note
 * (after one blank line) when missing, appending after the results already there otherwise. A
 * result whose id is already in that section replaces the old callout and block in place (an
 * `interrupted` result superseded, say); for several results with one id the last wins. Keeps the
 * note's line endings and never changes anything else, except that a note ending inside an
 * unclosed top-level code fence gets that fence closed first, so the results are not swallowed.
 * With `order` (the note's call ids in block order), a new result goes before the first result
 * already there whose call comes later in the note, so the section reads in block order even when
 * results arrive at different times (a call approved after the others ran).
 * @param text The note's text.
 * @param results Results in block order.
 * @param order The ids of the note's calls in block order.
 */
export function appendResults(
  text: string,
  results: readonly ToolResult[],
  order: readonly string[] = [],
): string {
  if (results.length === 0) return text;
  const eol = detectLineEnding(text);
  const byId = new Map(results.map((r) => [r.id, r]));
  const render = (r: ToolResult) => normalizeLineEndings(renderResult(r), eol);
  const structure = readStructure(text);
  const section = findSection(structure, RESULTS_HEADING, text.length);
  if (section === null) {
    const blocks = [...byId.values()].map(render).join(eol + eol);
    return appendBlock(text, structure, `## ${RESULTS_HEADING}${eol}${eol}${blocks}${eol}`, eol);
  }
  const existing = resultBlocks(text, section);
  const edits = findReplacements(existing, byId, render);
  const replaced = new Set(edits.map((e) => e.id));
  const rank = new Map(order.map((id, i) => [id, i]));
  // For each result already there, the latest block order among it and those before it: the first
  // result whose call comes after a new one's is then found by a binary search, not a scan (a
  // note of thousands of results made this quadratic).
  const latest: number[] = [];
  let max = -1;
  for (const e of existing) {
    max = Math.max(max, rank.get(e.id) ?? -1);
    latest.push(max);
  }
  const fresh: ToolResult[] = [];
  const before = new Map<number, ToolResult[]>();
  for (const result of byId.values()) {
    if (replaced.has(result.id)) continue;
    const mine = rank.get(result.id);
    const next = mine === undefined ? undefined : existing[firstAbove(latest, mine)];
    if (next === undefined) {
      fresh.push(result);
      continue;
    }
    let list = before.get(next.from);
    if (list === undefined) before.set(next.from, (list = []));
    list.push(result);
  }
  for (const [from, list] of before) {
    // After a blank line: a quote or paragraph the user wrote right before the result would take
    // the new callout as its own lines.
    const lead = from > 0 && trailingBreaks(text, 2, from) < 2 ? eol : '';
    edits.push({
      id: '',
      from,
      to: from,
      text: lead + list.map(render).join(eol + eol) + eol + eol,
    });
  }
  if (fresh.length > 0) {
    const rest = text.slice(section.contentEnd);
    const closer = section.last
      ? closeDangling(text.slice(0, section.contentEnd), structure, eol)
      : '';
    let insert = closer + eol + eol + fresh.map(render).join(eol + eol);
    if (rest === '') insert += eol;
    else if (rest.trim() !== '' && !/^(?:\r\n|\r|\n)[ \t]*(?:\r\n|\r|\n)/.test(rest)) insert += eol;
    edits.push({ id: '', from: section.contentEnd, to: section.contentEnd, text: insert });
  }
  return applyEdits(text, edits);
}

/** The index of the first value above `value` in a non-decreasing list; the length when none. */
function firstAbove(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((sorted[mid] as number) > value) high = mid;
    else low = mid + 1;
  }
  return low;
}

/**
 * Apply non-overlapping edits in one pass, pieces joined once. An insertion and a replacement
 * that start at one place go in that order. (Slicing the text edited so far, once per edit, made
 * an edit of thousands of results quadratic: each slice of a concatenated string copies it.)
 */
function applyEdits(text: string, edits: Edit[]): string {
  edits.sort((a, b) => a.from - b.from || a.to - b.to);
  const pieces: string[] = [];
  let at = 0;
  for (const e of edits) {
    pieces.push(text.slice(at, e.from), e.text);
    at = e.to;
  }
  pieces.push(text.slice(at));
  return pieces.join('');
}

/**
 * What to append to a note so that a new `## heading` section with `body` follows it and is read
 * as markdown: a code fence, HTML block or Obsidian comment left open at the end of the note is
 * closed first, and the section is set off by a blank line. For an error appended to a note that
 * is not otherwise rewritten (one moved to `Failed/`).
 * @param text The note's text.
 * @param heading The heading text, without the leading `## `.
 * @param body The section's markdown (any line endings).
 */
export function appendedSection(text: string, heading: string, body: string): string {
  const eol = detectLineEnding(text);
  const block = `## ${heading}${eol}${eol}${normalizeLineEndings(body.trimEnd(), eol)}${eol}`;
  return appendBlock(text, readStructure(text), block, eol).slice(text.length);
}

/**
 * Replaces the body of a vaultd-owned level-2 section such as `## Approval`, removes the section
 * when `body` is null, or adds it just before `## Tool Results` (or at the end) when missing.
 * Removing a section at the very end of a note leaves the note ending in one line ending; one
 * between two blocks leaves a blank line between them, so they are read apart as before.
 * @param text The note's text.
 * @param heading The heading text, with or without the leading `## `.
 * @param body The section's markdown (any line endings; its text must already be inert), or null.
 * @param markers Texts one of which vaultd's section holds (its first line, a `pending_call` key):
 *   a section of that heading holding none (the user's own `## Approval`) is left as it is, never
 *   replaced or removed; one that copies vaultd's (an agent's forged decisions) is vaultd's.
 */
export function replaceSection(
  text: string,
  heading: string,
  body: string | null,
  markers?: readonly string[],
): string {
  const name = heading.replace(/^#+[ \t]*/, '').trim();
  // Nothing to remove where no text a section of vaultd's holds is in the note.
  if (body === null && !(markers ?? [name]).some((m) => text.includes(m))) return text;
  const eol = detectLineEnding(text);
  const structure = readStructure(text);
  const ours =
    markers === undefined
      ? undefined
      : (span: SectionSpan): boolean => {
          const content = text.slice(span.headingEnd, span.contentEnd);
          return markers.some((marker) => content.includes(marker));
        };
  // With markers, the heading is matched as the Approval section's reader matches it, ignoring
  // case: an agent's `## approval` copy of vaultd's section is vaultd's to replace.
  const section = findSection(structure, name, text.length, ours, ours !== undefined);
  const block =
    body === null ? '' : `## ${name}${eol}${eol}${normalizeLineEndings(body.trimEnd(), eol)}${eol}`;
  if (section !== null) {
    const before = text.slice(0, section.start);
    const shown = block === '' ? '' : commentCloser(text, structure, section.start, eol) + block;
    if (section.end >= text.length) {
      if (block !== '') return before + shown;
      return dropTrailingBlankLines(before, eol);
    }
    if (block !== '') return before + shown + eol + text.slice(section.end);
    // The blocks on either side would otherwise touch: a paragraph or quote before the heading
    // would take a setext heading after it as its own text.
    const apart = before !== '' && trailingBreaks(before, 2) < 2 ? eol : '';
    return before + apart + text.slice(section.end);
  }
  if (block === '') return text;
  const results = findSection(structure, RESULTS_HEADING, text.length);
  if (results !== null) {
    const closer = commentCloser(text, structure, results.start, eol);
    return text.slice(0, results.start) + closer + block + eol + text.slice(results.start);
  }
  return appendBlock(text, structure, block, eol);
}

interface Edit {
  readonly id: string;
  readonly from: number;
  readonly to: number;
  readonly text: string;
}

function findReplacements(
  existing: readonly ResultBlock[],
  byId: ReadonlyMap<string, ToolResult>,
  render: (r: ToolResult) => string,
): Edit[] {
  const edits: Edit[] = [];
  const done = new Set<string>();
  for (const block of existing) {
    const result = byId.get(block.id);
    if (result === undefined || done.has(result.id)) continue;
    done.add(result.id);
    edits.push({ id: result.id, from: block.from, to: block.to, text: render(result) });
  }
  return edits;
}

/** A result already in the section: its id, from its callout (when it has one) to its block's end. */
interface ResultBlock {
  readonly id: string;
  readonly from: number;
  readonly to: number;
}

/** The result blocks of the section, in note order. */
function resultBlocks(text: string, section: SectionSpan): ResultBlock[] {
  const out: ResultBlock[] = [];
  section.blocks.forEach((block, i) => {
    const fence = block.fence;
    if (fence === undefined || fence.lang !== 'json' || !fence.closed) return;
    const id = readResultId(fence.value);
    if (id === null) return;
    const prev = section.blocks[i - 1];
    const callout =
      prev?.kind === 'blockquote' && CALLOUT_START.test(text.slice(prev.start, prev.start + 40));
    out.push({ id, from: callout && prev !== undefined ? prev.start : block.start, to: block.end });
  });
  return out;
}

function readResultId(code: string): string | null {
  if (!code.includes('tool_result')) return null;
  try {
    const json = JSON.parse(code) as { tool_result?: { id?: unknown } } | null;
    const id = json?.tool_result?.id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/** Appends a block at the end of the note after one blank line. */
function appendBlock(text: string, structure: NoteStructure, block: string, eol: string): string {
  const closed = text + closeDangling(text, structure, eol);
  if (closed === '') return block;
  return closed + eol.repeat(Math.max(0, 2 - trailingBreaks(closed, 2))) + block;
}

// The two below scan back from the end: the regular expressions they replace (`/(?:\r\n|\r|\n)*$/`
// and the like) are tried at every place of a run of line breaks, time growing with its square
// (60,000 blank lines inside a note held the main thread for 3 s).

/** How many line breaks (CRLF counted once) end `text` (up to `end`), counting up to `most`. */
function trailingBreaks(text: string, most: number, end = text.length): number {
  let count = 0;
  for (let at = end - 1; at >= 0 && count < most; at--) {
    const code = text.charCodeAt(at);
    if (code === 10) {
      count++;
      if (text.charCodeAt(at - 1) === 13) at--;
    } else if (code === 13) count++;
    else break;
  }
  return count;
}

/**
 * `text` with the blank lines and line breaks at its end replaced by one line break (`eol`);
 * spaces ending its last line are kept. Unchanged when it does not end in a line break or blank.
 */
function dropTrailingBlankLines(text: string, eol: string): string {
  let start = text.length;
  while (start > 0) {
    const code = text.charCodeAt(start - 1);
    if (code !== 32 && code !== 9 && code !== 10 && code !== 13) break;
    start--;
  }
  let firstBreak = start;
  while (firstBreak < text.length) {
    const code = text.charCodeAt(firstBreak);
    if (code === 10 || code === 13) return text.slice(0, firstBreak) + eol;
    firstBreak++;
  }
  return text;
}

// HTML blocks that end only at a marker, not at a blank line (CommonMark's kinds 1 to 5): left
// open at the end of a note, they would swallow whatever is appended.
const HTML_ENDS: readonly [RegExp, string][] = [
  [/^ {0,3}<(script|pre|style|textarea)(?=[\s>]|$)/i, ''],
  [/^ {0,3}<!--/, '-->'],
  [/^ {0,3}<\?/, '?>'],
  [/^ {0,3}<!\[CDATA\[/, ']]>'],
  [/^ {0,3}<![A-Za-z]/, '>'],
];

/**
 * What ends a code fence, HTML block or Obsidian comment left open at the end of the note, so
 * what is appended after it is read as markdown and shown; '' when nothing is open.
 * @param text the note up to where the closer goes (its end, or the end of its last block).
 */
function closeDangling(text: string, structure: NoteStructure, eol: string): string {
  const closer = closeDanglingFence(text, structure, eol);
  if (!isObsidianCommentOpen(text, structure, text.length)) return closer;
  const lead = /(?:\r\n|\r|\n)$/.test(text + closer) ? '' : eol;
  return `${closer}${lead}%%`;
}

/**
 * `%%` and a blank line when an Obsidian comment is open where a section goes (at the start of a
 * line), so the section is shown; '' otherwise. See {@link isObsidianCommentOpen}.
 */
function commentCloser(text: string, structure: NoteStructure, at: number, eol: string): string {
  return isObsidianCommentOpen(text, structure, at) ? `%%${eol}${eol}` : '';
}

/**
 * The text that ends a top-level code fence or HTML block left open at the end of the note, so
 * what is appended after it is read as markdown; '' when there is none.
 * @param text the note up to where the closer goes (its end, or the end of its last block).
 */
function closeDanglingFence(text: string, structure: NoteStructure, eol: string): string {
  const last = structure.top.at(-1);
  if (last === undefined) return '';
  const lead = /(?:\r\n|\r|\n)$/.test(text) ? '' : eol;
  const fence = last.fence;
  if (fence !== undefined) return fence.closed ? '' : lead + fence.marker;
  if (last.kind !== 'html_block') return '';
  const block = text.slice(last.start, last.end);
  for (const [opener, marker] of HTML_ENDS) {
    const open = opener.exec(block);
    if (open === null) continue;
    const end = marker === '' ? `</${(open[1] ?? '').toLowerCase()}>` : marker;
    const rest = block.slice(open[0].length);
    return (marker === '' ? rest.toLowerCase() : rest).includes(end) ? '' : lead + end;
  }
  return '';
}
