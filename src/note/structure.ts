import type MarkdownItClass from 'markdown-it';
import type { MarkdownIt, StateBlock, Token } from 'markdown-it';
import { createRequire } from 'node:module';
import {
  MAX_NESTING,
  buildLineTable,
  hrCharsForTest as scanHrChars,
  quoteStepsForTest as scanQuoteSteps,
  scanBlocks,
} from './block-scan.ts';
import type { BlockToken, ScanState } from './block-scan.ts';
import { splitFrontMatter } from './front-matter.ts';
import { decodeInfoString } from './info-string.ts';
import { lineStartsOf, type LineStarts } from './places.ts';
import type { FrontMatterSpan } from './types.ts';
import { RecentTexts } from './recent-texts.ts';

/**
 * A fenced code block, as CommonMark reads it. It is also its own {@link TopBlock} when it is at
 * the top level (`kind`, `firstLine` and `fence`, itself): one object a fence, not two, in a
 * note of 12,000 calls (bench/README.md, item 43).
 */
export interface FenceBlock extends TopBlock {
  readonly kind: 'fence';
  /** The fence itself. */
  readonly fence: FenceBlock;
  /** Offset of the first character of the opening fence's line. */
  readonly start: number;
  /** Offset just after the last line of the block (its closing fence, or its last content line). */
  readonly end: number;
  /** Offset of the fence marker itself (after indentation and container markers). */
  readonly markerAt: number;
  /** 0-based line of the opening fence. */
  readonly line: number;
  /** Containers around it: 0 at the top level, one per block quote, list and list item. */
  readonly depth: number;
  /** Inside a block quote (or a callout) at some level. */
  readonly quoted: boolean;
  /** The fence marker, e.g. `` ``` `` or `~~~~`. */
  readonly marker: string;
  /** The info string, trimmed, entities and backslash escapes decoded. */
  readonly info: string;
  /** The first word of the info string, lower-cased (`json`). */
  readonly lang: string;
  /** The literal content (container prefixes and the fence's indentation removed). */
  readonly value: string;
  /** Whether a closing fence ended it; false when it ran to the end of the note or its container. */
  readonly closed: boolean;
}

/** A heading (ATX or setext). */
export interface HeadingBlock {
  readonly start: number;
  readonly end: number;
  /** 0-based line where it starts. */
  readonly line: number;
  readonly depth: number;
  readonly level: number;
  /** Its text as written (inline markup not interpreted), trimmed. */
  readonly text: string;
}

/** A block at the top level of the note (a paragraph, list, quote, fence, heading…). */
export interface TopBlock {
  /** markdown-it's name of the block: `paragraph`, `bullet_list`, `blockquote`, `fence`, `heading`… */
  readonly kind: string;
  readonly start: number;
  /** Offset just after its last character that is not white space. */
  readonly end: number;
  /** Its first line, 0-based. */
  readonly firstLine: number;
  /** The fence, when the block is one. */
  readonly fence?: FenceBlock;
  /** The heading, when the block is one. */
  readonly heading?: HeadingBlock;
}

/**
 * The block structure of a note: the one reading of it that finding calls, the sections vaultd
 * owns and the approval decisions all use, so they can never disagree.
 */
export interface NoteStructure {
  readonly fences: readonly FenceBlock[];
  readonly headings: readonly HeadingBlock[];
  readonly top: readonly TopBlock[];
  /** Offset where each 0-based line starts. */
  readonly lineStarts: LineStarts;
  /** Lines inside a block quote or callout. */
  readonly quotedLines: LineSet;
  /** The front-matter's span (`splitFrontMatter`), null when the note has none. */
  readonly frontMatter: FrontMatterSpan | null;
}

// markdown-it's block parser. The daemon reads every note with vaultd's scanner (block-scan.ts),
// which runs one rule of it (link reference definitions) over the scanner's line table; the
// whole parse, plus the fence rule below, is the reference the tests hold the scanner to
// (`structureFromMarkdownItForTest`). It is loaded on first need, not at start-up: loading it
// was 40–50 ms of every start and 1.5 MB of heap, for a rule most notes never need
// (bench/README.md, item 30).
const require = createRequire(import.meta.url);

type RuleFn = (state: StateBlock, startLine: number, endLine: number, silent: boolean) => boolean;
interface MarkdownItParts {
  readonly md: MarkdownIt;
  /** `md` as the reference rule sees it: the lines that end a definition are CommonMark's. */
  readonly referenceMd: MarkdownIt;
  readonly BlockState: MarkdownIt['block']['State'];
  readonly referenceRule: RuleFn;
  readonly ReferenceState: StateBlock;
}
let parts: MarkdownItParts | undefined;

function markdownIt(): MarkdownItParts {
  if (parts !== undefined) return parts;
  const MarkdownIt = require('markdown-it') as typeof MarkdownItClass;
  const md = new MarkdownIt('commonmark', { html: true });
  md.set({ maxNesting: MAX_NESTING });
  const BlockState = md.block.State;
  const builtinRules = md.block.ruler['__rules__' as never] as unknown as {
    name: string;
    fn: RuleFn;
  }[];
  const fenceRule = builtinRules.find((rule) => rule.name === 'fence')?.fn;
  if (fenceRule === undefined) throw new Error('markdown-it has no fence rule');
  const referenceRule = builtinRules.find((rule) => rule.name === 'reference')?.fn;
  if (referenceRule === undefined) throw new Error('markdown-it has no reference rule');

  // The block state the reference rule runs on: markdown-it's, with a `push` that makes a plain
  // token like the scanner's. The library's Token class sets each field through a helper: 200,000
  // short definitions read in 732 ms with it, 557 ms with this (one run each, scratch script).
  const ReferenceState = Object.create(BlockState.prototype as object) as StateBlock;
  ReferenceState.push = function push(this: StateBlock, type, tag, nesting): Token {
    if (nesting < 0) this.level--;
    const token: BlockToken = {
      type,
      tag,
      nesting,
      level: this.level,
      map: null,
      markup: '',
      info: '',
      content: '',
      meta: null,
    };
    if (nesting > 0) this.level++;
    this.tokens.push(token as unknown as Token);
    return token as unknown as Token;
  };

  // The built-in fence rule, plus one thing it knows but does not keep: whether a closing fence
  // ended the block. It is, exactly when the block's last line (past its first) is a closing
  // fence.
  md.block.ruler.at(
    'fence',
    (state, startLine, endLine, silent) => {
      if (!fenceRule(state, startLine, endLine, silent)) return false;
      if (silent) return true;
      const at = state.bMarks[startLine]! + state.tShift[startLine]!;
      // Its column: lines keep their columns in the original text, whatever its line endings.
      const column = at - (state.src.lastIndexOf('\n', at - 1) + 1);
      const token = state.tokens[state.tokens.length - 1] as Token;
      const last = state.line - 1;
      token.meta = { closed: last > startLine && closesFence(state, last, token.markup), column };
      return true;
    },
    { alt: ['paragraph', 'reference', 'blockquote', 'list'] },
  );
  // The reference rule asks its terminator rules where the definition's lines end. markdown-it's
  // (its list rule with no paragraph's limits, no setext underline) let a definition take a
  // setext underline (`[a]:` then `--` is a heading in CommonMark) or an item numbered 2; the
  // scanner answers as CommonMark's paragraph would.
  const endsDefinition: RuleFn = (state, line) =>
    (state as ReferenceBlockState).scan.endsDefinition(line);
  // And any destination makes a definition, as in CommonMark: markdown-it refuses the ones it
  // would not render as links (`javascript:`), which then read as a paragraph.
  // The destination is not kept (vaultd renders no links), so it is not normalised either:
  // mdurl's parse and encode were a tenth of a note of definitions.
  const referenceMd = Object.create(md, {
    block: { value: { ruler: { getRules: () => [endsDefinition] } } },
    validateLink: { value: () => true },
    normalizeLink: { value: (url: string) => url },
  }) as MarkdownIt;
  parts = { md, referenceMd, BlockState, referenceRule, ReferenceState };
  return parts;
}

/**
 * markdown-it's block tokens of a piece of markdown, inline tokens with their content (container
 * markers and indentation taken off) and no inline parse: for reading one list or quote as
 * CommonMark does where the structure keeps only its span (the Obsidian comment count).
 * @param src the markdown, starting at a line.
 */
export function blockTokensOf(src: string): readonly Token[] {
  const { md } = markdownIt();
  const tokens: Token[] = [];
  md.block.parse(src, md, {}, tokens);
  return tokens;
}

/**
 * The line table markdown-it's block state and vaultd's scanner build for `src`, for the test
 * that keeps them equal.
 * @param src normalised markdown.
 */
export function lineTablesForTest(src: string): { ours: unknown; markdownIt: unknown } {
  const { md, BlockState } = markdownIt();
  const markdownItState = new BlockState(src, md, {}, []);
  const ours = buildLineTable(src);
  const rows = (column: ArrayLike<number>) => Array.from(column).slice(0, ours.lineMax + 1);
  return {
    ours: {
      bMarks: rows(ours.bMarks),
      eMarks: rows(ours.eMarks),
      tShift: rows(ours.tShift),
      sCount: rows(ours.sCount),
      bsCount: rows(ours.bsCount),
      lineMax: ours.lineMax,
    },
    markdownIt: {
      bMarks: markdownItState.bMarks,
      eMarks: markdownItState.eMarks,
      tShift: markdownItState.tShift,
      sCount: markdownItState.sCount,
      bsCount: markdownItState.bsCount,
      lineMax: markdownItState.lineMax,
    },
  };
}

const referenceStates = new WeakMap<ScanState, ReferenceBlockState>();

/**
 * markdown-it's link reference definition rule, run for vaultd's scanner over the scanner's own
 * line table (a block state of markdown-it's around the same columns): the line after the
 * definition, or -1 when the block is not one.
 */
function readReference(
  scan: ScanState,
  line: number,
  endLine: number,
  continuation: boolean,
): number {
  const { referenceRule } = markdownIt();
  // One block state per scan, made at its first definition (a note of 100,000 definitions made
  // as many); what the rule reads of it is set for each definition below.
  let state = referenceStates.get(scan);
  if (state === undefined) {
    const { referenceMd, ReferenceState } = markdownIt();
    state = Object.create(ReferenceState) as ReferenceBlockState;
    state.scan = scan;
    state.src = scan.src;
    state.md = referenceMd;
    state.tokens = scan.tokens as unknown as Token[];
    state.bMarks = scan.bMarks as unknown as number[];
    state.eMarks = scan.eMarks as unknown as number[];
    state.tShift = scan.tShift as unknown as number[];
    state.sCount = scan.sCount as unknown as number[];
    state.bsCount = scan.bsCount as unknown as number[];
    referenceStates.set(scan, state);
  }
  // A fresh environment each time: the rule files each label in it, and nothing reads them. Its
  // table is made without a prototype, which V8 keeps as a dictionary: a plain object took a new
  // hidden class for every label (a third of a note of definitions).
  state.env = { references: Object.create(null) as NonNullable<StateBlock['env']['references']> };
  // A paragraph's line past its first may be indented any amount: the rule reads no definition
  // from a line indented four columns or more past the container's, so it is told the line's own.
  state.blkIndent = continuation
    ? Math.max(scan.blkIndent, scan.sCount[line] as number)
    : scan.blkIndent;
  state.line = line;
  state.lineMax = scan.lineMax;
  state.tight = false;
  state.parentType = 'root';
  state.level = scan.level;
  return referenceRule(state, line, endLine, false) ? state.line : -1;
}

/** A named character reference (`&amp;`) decoded, or as written when HTML has no such name. */
function namedReference(reference: string): string {
  return markdownIt().md.utils.unescapeAll(reference);
}

/** markdown-it's block state, for the reference rule run over the scanner's table. */
interface ReferenceBlockState extends StateBlock {
  scan: ScanState;
}

function closesFence(state: StateBlock, line: number, markup: string): boolean {
  let pos = state.bMarks[line]! + state.tShift[line]!;
  const max = state.eMarks[line]!;
  if (state.sCount[line]! - state.blkIndent >= 4) return false;
  if (state.src.charCodeAt(pos) !== markup.charCodeAt(0)) return false;
  const from = pos;
  pos = state.skipChars(pos, markup.charCodeAt(0));
  if (pos - from < markup.length) return false;
  return state.skipSpaces(pos) >= max;
}

/**
 * The block tokens of the tests' reference parse for `src` (normalised markdown), for the test
 * that compares them with a stock markdown-it's (only the fence rule differs, by its `meta`).
 * @param src normalised markdown.
 */
export function tokensForTest(src: string): Token[] {
  const { md } = markdownIt();
  const tokens: Token[] = [];
  md.block.parse(src, md, {}, tokens);
  return tokens;
}

/**
 * A note's structure as markdown-it's block parser reads it (not from the cache), for the tests
 * that keep vaultd's own block scanner equal to it.
 * @param text the whole note.
 */
export function structureFromMarkdownItForTest(text: string): NoteStructure {
  return read(text, 'markdown-it');
}

/** A link reference definition: its label (normalised) and its lines [first, last + 1). */
export interface DefinitionForTest {
  label: string;
  lines: [number, number];
}

// The link reference definitions read, while a test asks for them.
let definitions: DefinitionForTest[] | undefined;

/**
 * A note's structure as the scanner or markdown-it's parse reads it (not from the cache), with
 * the link reference definitions it read at any depth, for the tests that compare both with
 * CommonMark's reference.
 * @param text the whole note.
 * @param reader which reading.
 */
export function readForTest(
  text: string,
  reader: Reader,
): { structure: NoteStructure; definitions: DefinitionForTest[] } {
  const read_: DefinitionForTest[] = [];
  definitions = read_;
  try {
    return { structure: read(text, reader), definitions: read_ };
  } finally {
    definitions = undefined;
  }
}

/**
 * How many lines the block quotes of `src` walk (block-scan.ts's `quoteStepsForTest`).
 * @param src normalised markdown.
 */
export function quoteStepsForTest(src: string): number {
  return scanQuoteSteps(src, readReference);
}

/**
 * How many characters the thematic-break checks of `src` read (block-scan.ts's `hrCharsForTest`).
 * @param src normalised markdown.
 */
export function hrCharsForTest(src: string): number {
  return scanHrChars(src, readReference);
}

/**
 * A note's structure as vaultd's block scanner reads it (not from the cache).
 * @param text the whole note.
 */
export function structureFromScannerForTest(text: string): NoteStructure {
  return read(text, 'scanner');
}

// Recent readings: parsing a note and then writing its results back reads it once (in the
// worker thread for a large note, so one large note fits, and only one: notes over 64 KiB are read
// there one at a time).
const recent = new RecentTexts<NoteStructure>(32, 8 * 1024 * 1024, 64 * 1024);

/**
 * Read a note's block structure with CommonMark's block rules as markdown-it implements them
 * (vaultd's scanner, `block-scan.ts`; linear in the note's length): every fenced code block with its decoded
 * info string, literal content, container depth and whether it was closed; every heading; the
 * top-level blocks; the lines inside quotes. The front-matter's lines are read as empty lines
 * (never markdown); offsets are into the original text
 * (CRLF, CR and a leading BOM kept). Recent readings are cached, so parsing a note and then
 * writing its results back reads it once.
 * @param text the whole note.
 */
export function readStructure(text: string): NoteStructure {
  let structure = recent.get(text);
  if (structure === undefined) {
    structure = read(text);
    recent.set(text, structure);
  }
  return structure;
}

/** Which block reader `read` uses: vaultd's scanner, or markdown-it's parser (the tests' reference). */
export type Reader = 'scanner' | 'markdown-it';

function read(text: string, reader: Reader = 'scanner'): NoteStructure {
  // A leading BOM is not part of the first line: offsets of line 0 start after it.
  const bom = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const hasCr = text.includes('\r');
  const lineStarts = lineStartsOf(text, bom);
  const span = splitFrontMatter(text);
  // Same lines, same columns: only line endings change, and the front-matter (up to `cut`) is
  // read as empty lines: never markdown, and every line keeps its number.
  let source = bom === 0 ? text : text.slice(bom);
  if (hasCr) source = source.replace(/\r\n?/g, '\n');
  // CommonMark reads U+0000 as U+FFFD (one code unit for one: offsets stay): an HTML tag or a
  // definition that a NUL made unreadable took a fence the reference reads as HTML for a call.
  if (source.includes('\0')) source = source.replaceAll('\0', '\uFFFD');
  const cut = span === null ? 0 : offsetInNormalized(text, span.end) - bom;
  const lineEnd = (line: number): number => {
    const next = lineStarts[line + 1];
    if (next === undefined) return text.length;
    // Just after the line's text, before its line ending.
    return text.charCodeAt(next - 2) === 13 && text.charCodeAt(next - 1) === 10
      ? next - 2
      : next - 1;
  };

  const fences: FenceBlock[] = [];
  const headings: HeadingBlock[] = [];
  const top: TopBlock[] = [];
  // One byte a line, made at the first quote: a Set of 20,000 quoted lines in a 1 MB note was 4 %
  // of its parse and its garbage.
  let quoted: Uint8Array | undefined;
  let quotes = 0;
  const consume = (tokens: Token[]): void => {
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i] as Token;
      const map = token.map;
      if (token.type === 'blockquote_open') {
        // The outermost quote holds the lines of every quote inside it.
        if (quotes === 0 && map !== null) {
          quoted ??= new Uint8Array(lineStarts.length);
          quoted.fill(1, map[0], map[1]);
        }
        quotes++;
      } else if (token.type === 'blockquote_close') {
        quotes--;
      }
      if (definitions !== undefined && token.type === 'reference_definition') {
        definitions.push({ label: (token.meta as { label: string }).label, lines: map ?? [0, 0] });
      }
      if (map === null) continue;
      const start = lineStarts[map[0]] ?? text.length;
      let end = lineEnd(Math.max(map[0], map[1] - 1));
      // Lists and quotes may end with blank lines; a block ends at its last visible character.
      while (end > start && isBlank(text.charCodeAt(end - 1))) end--;
      const atTop = token.level === 0 && (token.nesting === 1 || token.nesting === 0);
      let fence: FenceBlock | undefined;
      let heading: HeadingBlock | undefined;
      if (token.type === 'fence') {
        const meta = token.meta as { closed: boolean; column: number };
        // Trimmed, then backslash escapes and character references decoded (CommonMark's order:
        // `&#32;` is a space that stays); only a named reference needs markdown-it (its table of
        // HTML's names).
        const info = decodeInfoString(token.info.trim(), namedReference);
        const block: Mutable<FenceBlock> = {
          kind: 'fence',
          start,
          end,
          firstLine: map[0],
          fence: undefined as unknown as FenceBlock,
          markerAt: start + meta.column,
          line: map[0],
          depth: token.level,
          quoted: quotes > 0,
          marker: token.markup,
          info,
          lang: firstWord(info).toLowerCase(),
          // Every line of content ends with a line ending, the note's last one included (the
          // scanner's content does; markdown-it's, the tests' reference, may lack the last).
          value:
            token.content === '' || token.content.endsWith('\n')
              ? token.content
              : `${token.content}\n`,
          closed: meta.closed,
        };
        block.fence = block;
        fence = block;
        fences.push(fence);
      } else if (token.type === 'heading_open') {
        const inline = tokens[i + 1];
        heading = {
          start,
          end,
          line: map[0],
          depth: token.level,
          level: token.tag.charCodeAt(1) - 0x30,
          text: (inline?.type === 'inline' ? inline.content : '').trim(),
        };
        headings.push(heading);
      }
      if (atTop && fence !== undefined) {
        top.push(fence);
      } else if (atTop) {
        const kind = token.nesting === 1 ? openKind(token.type) : token.type;
        const block: Mutable<TopBlock> = {
          kind,
          start,
          end,
          firstLine: map[0],
        };
        if (fence !== undefined) block.fence = fence;
        if (heading !== undefined) block.heading = heading;
        top.push(block);
      }
    }
  };
  const tokens: Token[] = [];
  if (reader === 'markdown-it') {
    const { md } = markdownIt();
    md.block.parse(blankFront(source, cut), md, {}, tokens);
  } else {
    const sweep = consume as (t: BlockToken[]) => void;
    scanBlocks(source, cut, tokens as unknown as BlockToken[], sweep, readReference);
  }
  consume(tokens);

  const quotedLines = new LineBits(quoted);
  return { fences, headings, top, lineStarts, quotedLines, frontMatter: span };
}

// The kind of a block from its opening token's type (`bullet_list_open` → `bullet_list`): one
// string per type, not one per block (a note of 260,000 headings made as many).
const openKinds = new Map<string, string>();
function openKind(type: string): string {
  let kind = openKinds.get(type);
  if (kind === undefined) {
    kind = type.slice(0, -'_open'.length);
    openKinds.set(type, kind);
  }
  return kind;
}

/** `source` with its lines before `cut` (the front-matter's) made empty. */
function blankFront(source: string, cut: number): string {
  if (cut === 0) return source;
  let lines = 0;
  for (let i = source.indexOf('\n'); i !== -1 && i < cut; i = source.indexOf('\n', i + 1)) lines++;
  return '\n'.repeat(lines) + source.slice(cut);
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A set of 0-based line numbers. */
export interface LineSet {
  has(line: number): boolean;
}

/** Lines marked 1 in a byte array (none when there is no array). */
class LineBits implements LineSet {
  constructor(private readonly bits: Uint8Array | undefined) {}
  has(line: number): boolean {
    return this.bits?.[line] === 1;
  }
}

/** The info string up to its first space or tab. */
function firstWord(info: string): string {
  for (let i = 0; i < info.length; i++) {
    const c = info.charCodeAt(i);
    if (c === 32 || c === 9) return info.slice(0, i);
  }
  return info;
}

function isBlank(c: number): boolean {
  return c === 10 || c === 13 || c === 32 || c === 9;
}

function offsetInNormalized(text: string, offset: number): number {
  if (!text.includes('\r')) return offset;
  let removed = 0;
  for (let i = text.indexOf('\r\n'); i !== -1 && i < offset; i = text.indexOf('\r\n', i + 2)) {
    removed++;
  }
  return offset - removed;
}
