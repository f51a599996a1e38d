import remarkFrontmatter from 'remark-frontmatter';
import remarkParse from 'remark-parse';
import { unified } from 'unified';
import type { Processor } from 'unified';
import type { Heading, Root, RootContent } from 'mdast';
import type { FrontMatterSpan } from './types.ts';

/** Level-2 headings whose sections vaultd writes and never scans for calls. */
export const OWNED_HEADINGS: readonly string[] = ['Tool Results', 'Approval'];

/** Block quote depth beyond which a note is not parsed (micromark slows down steeply). */
export const MAX_QUOTE_DEPTH = 64;
/** Indentation (columns) of a list item beyond which a note is not parsed. */
export const MAX_LIST_INDENT = 256;

// Only block structure matters here (fences, headings, quotes, lists), and CommonMark decides it
// before inline parsing, so the inline constructs are switched off: parsing is about 5x faster.
// Heading text is then raw (`## Tool *Results*` is not `## Tool Results`).
const INLINE_CONSTRUCTS = [
  'attention',
  'autolink',
  'characterEscape',
  'characterReference',
  'codeText',
  'hardBreakEscape',
  'hardBreakTrailing',
  'htmlText',
  'labelStartImage',
  'labelStartLink',
  'labelEnd',
];

function blocksOnly(this: Processor): void {
  const data = this.data();
  const extensions = (data.micromarkExtensions ??= []);
  extensions.push({ disable: { null: INLINE_CONSTRUCTS } });
}

const processor = unified()
  .use(remarkParse)
  .use(remarkFrontmatter, ['yaml', 'toml'])
  .use(blocksOnly);

/** A parsed body, or why it was not parsed. */
export type ParsedMarkdown =
  { readonly root: Root } | { readonly root: null; readonly problem: string };

/**
 * Parses a note's markdown with offsets into the original text. The front-matter region is blanked
 * out first (so `---js` code is never mistaken for markdown) and a leading BOM is accounted for.
 * Never throws: a note nested too deeply to parse cheaply, or a parser failure, is a problem.
 * @param text The note's original text.
 * @param span Its front-matter span, or null.
 */
export function parseMarkdown(text: string, span: FrontMatterSpan | null): ParsedMarkdown {
  const cached = recentParses.get(text);
  if (cached !== undefined) return cached;
  const parsed = parseUncached(text, span);
  if (text.length <= CACHE_MAX_CHARS) {
    if (recentParses.size >= CACHE_ENTRIES) {
      recentParses.delete(recentParses.keys().next().value as string);
    }
    recentParses.set(text, parsed);
  }
  return parsed;
}

// The pipeline parses a note to find its calls and, when it writes the results back into the same
// text, again to find where the results go: a small cache of recent parses (trees are never
// mutated after parsing) makes the second parse free. The span is derived from the text, so the
// text alone is the key. Large notes are not kept, to bound memory.
const CACHE_ENTRIES = 128;
const CACHE_MAX_CHARS = 256 * 1024;
const recentParses = new Map<string, ParsedMarkdown>();

function parseUncached(text: string, span: FrontMatterSpan | null): ParsedMarkdown {
  const tooDeep = findExcessiveNesting(text);
  if (tooDeep !== null) return { root: null, problem: tooDeep };
  let shift = 0;
  let source = text;
  if (span !== null) {
    source = text.slice(0, span.end).replace(/[^\r\n]/g, ' ') + text.slice(span.end);
  } else if (text.charCodeAt(0) === 0xfeff) {
    // micromark drops a leading BOM and counts offsets without it.
    shift = 1;
    source = text.slice(1);
  }
  try {
    const root = processor.parse(source);
    if (shift !== 0) shiftOffsets(root, shift);
    return { root };
  } catch (error) {
    return { root: null, problem: `the markdown parser failed: ${(error as Error).message}` };
  }
}

/**
 * Whether a fenced code node is closed: remark runs an unclosed fence to the end of its
 * container, so the last line of the node must be a fence of the opening's kind and length.
 * @param text The note's original text.
 * @param start Offset of the node's opening fence.
 * @param end Offset of the node's end.
 */
export function isFenceClosed(text: string, start: number, end: number): boolean {
  const open = /^[ \t]*(`{3,}|~{3,})/.exec(text.slice(start, start + 64));
  const fence = open?.[1];
  if (fence === undefined) return false;
  const body = text.slice(start, end);
  const lastBreak = Math.max(body.lastIndexOf('\n'), body.lastIndexOf('\r'));
  if (lastBreak < 0) return false;
  const last = body
    .slice(lastBreak + 1)
    .replace(/^[ \t>]*/, '')
    .trimEnd();
  return last.length >= fence.length && last === (fence[0] ?? '`').repeat(last.length);
}

/** The plain text of a heading. */
export function headingText(heading: Heading): string {
  let out = '';
  const walk = (node: { value?: unknown; children?: unknown[] }): void => {
    if (typeof node.value === 'string') out += node.value;
    for (const child of node.children ?? []) walk(child as typeof node);
  };
  walk(heading);
  return out.trim();
}

/**
 * Offset ranges of vaultd's own sections: from a top-level `## Tool Results` or `## Approval`
 * heading up to the next level-1/2 heading that is not one of those, or the end of the note.
 * @param root The parsed note.
 * @param length Length of the note's text.
 */
export function findOwnedRanges(root: Root, length: number): [number, number][] {
  const ranges: [number, number][] = [];
  let open: number | null = null;
  for (const node of root.children) {
    if (node.type !== 'heading' || node.depth > 2) continue;
    const at = node.position?.start.offset ?? 0;
    const owned = node.depth === 2 && OWNED_HEADINGS.includes(headingText(node));
    if (owned && open === null) open = at;
    if (!owned && open !== null) {
      ranges.push([open, at]);
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
  /** Offset of the next level-1/2 heading, or the text's length. */
  readonly end: number;
  /** The section's top-level blocks after the heading. */
  readonly blocks: readonly RootContent[];
}

/**
 * Finds the first top-level level-2 section whose heading text is exactly `heading`.
 * @param root The parsed note.
 * @param heading The heading's text, without `## `.
 * @param length Length of the note's text.
 */
export function findSection(root: Root, heading: string, length: number): SectionSpan | null {
  const children = root.children;
  const index = children.findIndex(
    (n) => n.type === 'heading' && n.depth === 2 && headingText(n) === heading,
  );
  const head = children[index];
  if (head === undefined) return null;
  const blocks: RootContent[] = [];
  let end = length;
  for (const node of children.slice(index + 1)) {
    if (node.type === 'heading' && node.depth <= 2) {
      end = node.position?.start.offset ?? length;
      break;
    }
    blocks.push(node);
  }
  const headingEnd = head.position?.end.offset ?? 0;
  const contentEnd = blocks.at(-1)?.position?.end.offset ?? headingEnd;
  return { start: head.position?.start.offset ?? 0, headingEnd, contentEnd, end, blocks };
}

function findExcessiveNesting(text: string): string | null {
  const prefix = /^[ \t>]+((?:[-*+]|\d{1,9}[.)])(?=[ \t\r\n]|$))?/gm;
  for (let m = prefix.exec(text); m !== null; m = prefix.exec(text)) {
    const lead = m[0].slice(0, m[0].length - (m[1]?.length ?? 0));
    let quotes = 0;
    let width = 0;
    for (const c of lead) {
      if (c === '>') quotes++;
      width += c === '\t' ? 4 : 1;
    }
    if (quotes > MAX_QUOTE_DEPTH) {
      return `the note nests block quotes more than ${MAX_QUOTE_DEPTH} levels deep; flatten it`;
    }
    if (m[1] !== undefined && width > MAX_LIST_INDENT) {
      return `the note indents list items more than ${MAX_LIST_INDENT} columns; flatten it`;
    }
  }
  return null;
}

function shiftOffsets(
  node: {
    position?:
      { start: { offset?: number | undefined }; end: { offset?: number | undefined } } | undefined;
    children?: unknown[];
  },
  by: number,
): void {
  const stack = [node];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    if (n.position) {
      if (n.position.start.offset !== undefined) n.position.start.offset += by;
      if (n.position.end.offset !== undefined) n.position.end.offset += by;
    }
    for (const child of n.children ?? []) stack.push(child as typeof n);
  }
}
