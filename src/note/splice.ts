import type { Root } from 'mdast';
import type { ToolResult } from '../protocol/types.ts';
import { splitFrontMatter } from './front-matter.ts';
import { findSection, isFenceClosed, parseMarkdown } from './markdown.ts';
import type { SectionSpan } from './markdown.ts';
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
 * @param text The note's text.
 * @param results Results in block order.
 */
export function appendResults(text: string, results: readonly ToolResult[]): string {
  if (results.length === 0) return text;
  const eol = detectLineEnding(text);
  const byId = new Map(results.map((r) => [r.id, r]));
  const render = (r: ToolResult) => normalizeLineEndings(renderResult(r), eol);
  const root = parseRoot(text);
  const section = root === null ? null : findSection(root, RESULTS_HEADING, text.length);
  if (root === null || section === null) {
    const blocks = [...byId.values()].map(render).join(eol + eol);
    return appendBlock(text, root, `## ${RESULTS_HEADING}${eol}${eol}${blocks}${eol}`, eol);
  }
  const edits = findReplacements(text, section, byId, render);
  const fresh = [...byId.values()].filter((r) => !edits.some((e) => e.id === r.id));
  if (fresh.length > 0) {
    const rest = text.slice(section.contentEnd);
    const closer =
      root.children.at(-1) === section.blocks.at(-1) ? closeDanglingFence(text, root, eol) : '';
    let insert = closer + eol + eol + fresh.map(render).join(eol + eol);
    if (rest === '') insert += eol;
    else if (rest.trim() !== '' && !/^(?:\r\n|\r|\n)[ \t]*(?:\r\n|\r|\n)/.test(rest)) insert += eol;
    edits.push({ id: '', from: section.contentEnd, to: section.contentEnd, text: insert });
  }
  let out = text;
  for (const e of edits.sort((a, b) => b.from - a.from)) {
    out = out.slice(0, e.from) + e.text + out.slice(e.to);
  }
  return out;
}

/**
 * Replaces the body of a vaultd-owned level-2 section such as `## Approval`, removes the section
 * when `body` is null, or adds it just before `## Tool Results` (or at the end) when missing.
 * Removing a section at the very end of a note leaves the note ending in one line ending.
 * @param text The note's text.
 * @param heading The heading text, with or without the leading `## `.
 * @param body The section's markdown (any line endings; its text must already be inert), or null.
 */
export function replaceSection(text: string, heading: string, body: string | null): string {
  const name = heading.replace(/^#+[ \t]*/, '').trim();
  if (body === null && !text.includes(name)) return text;
  const eol = detectLineEnding(text);
  const root = parseRoot(text);
  const section = root === null ? null : findSection(root, name, text.length);
  const block =
    body === null
      ? ''
      : `## ${name}${eol}${eol}${normalizeLineEndings(body.replace(/\s+$/, ''), eol)}${eol}`;
  if (section !== null) {
    const before = text.slice(0, section.start);
    if (section.end >= text.length) {
      if (block !== '') return before + block;
      return before.replace(/(?:\r\n|\r|\n)(?:[ \t]*(?:\r\n|\r|\n))*[ \t]*$/, eol);
    }
    return before + (block === '' ? '' : block + eol) + text.slice(section.end);
  }
  if (block === '') return text;
  const results = root === null ? null : findSection(root, RESULTS_HEADING, text.length);
  if (results !== null) {
    return text.slice(0, results.start) + block + eol + text.slice(results.start);
  }
  return appendBlock(text, root, block, eol);
}

function parseRoot(text: string): Root | null {
  return parseMarkdown(text, splitFrontMatter(text)).root;
}

interface Edit {
  readonly id: string;
  readonly from: number;
  readonly to: number;
  readonly text: string;
}

function findReplacements(
  text: string,
  section: SectionSpan,
  byId: ReadonlyMap<string, ToolResult>,
  render: (r: ToolResult) => string,
): Edit[] {
  const edits: Edit[] = [];
  section.blocks.forEach((node, i) => {
    if (node.type !== 'code' || node.lang?.toLowerCase() !== 'json') return;
    const id = readResultId(node.value);
    const result = id === null ? undefined : byId.get(id);
    const from = node.position?.start.offset;
    const to = node.position?.end.offset;
    if (result === undefined || from === undefined || to === undefined) return;
    if (edits.some((e) => e.id === result.id) || !isFenceClosed(text, from, to)) return;
    const prev = section.blocks[i - 1];
    const prevStart = prev?.position?.start.offset;
    const callout =
      prev?.type === 'blockquote' &&
      prevStart !== undefined &&
      CALLOUT_START.test(text.slice(prevStart, prevStart + 40));
    edits.push({ id: result.id, from: callout ? prevStart : from, to, text: render(result) });
  });
  return edits;
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
function appendBlock(text: string, root: Root | null, block: string, eol: string): string {
  const closed = text + (root === null ? '' : closeDanglingFence(text, root, eol));
  if (closed === '') return block;
  const trailing = /(?:\r\n|\r|\n)*$/.exec(closed)?.[0] ?? '';
  const breaks = (trailing.match(/\r\n|\r|\n/g) ?? []).length;
  return closed + eol.repeat(Math.max(0, 2 - breaks)) + block;
}

/** The text that closes a top-level code fence left open at the end of the note, or ''. */
function closeDanglingFence(text: string, root: Root, eol: string): string {
  const last = root.children.at(-1);
  if (last?.type !== 'code') return '';
  const from = last.position?.start.offset ?? 0;
  const to = last.position?.end.offset ?? 0;
  const fence = /^[ \t]*(`{3,}|~{3,})/.exec(text.slice(from, from + 64))?.[1];
  if (fence === undefined || isFenceClosed(text, from, to)) return '';
  return (/(?:\r\n|\r|\n)$/.test(text) ? '' : eol) + fence;
}
