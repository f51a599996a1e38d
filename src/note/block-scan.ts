// vaultd's own reading of a note's block structure: the block rules of markdown-it's CommonMark
// parser (the same line table, the same container rules, the same order of rules), written for
// the one thing vaultd needs from them. It keeps no token for what it does not read (paragraphs,
// list items), tries a rule only when the line's first character can start it (markdown-it calls
// every rule in turn, and every "does this line end the paragraph" rule on every line of a
// paragraph), and reads a paragraph once where markdown-it reads it twice (setext heading, then
// paragraph). A 1 KB note: about 4 times faster than the markdown-it parse it replaces
// (bench/README.md, item 26).
//
// One rule is markdown-it's own, run over this scanner's line table: the link reference
// definition's (a block starting with `[` whose label may close with `]:`), which reads link
// syntax over several lines. One thing is done differently, for the same result: a run of lazy
// lines under nested quotes is read once, not once per quote (markdown-it's parse is quadratic
// there; see `blockquote`). And where markdown-it reads a note differently from CommonMark's
// reference implementation (commonmark.js), the scanner reads what the reference reads: each
// place says so (docs/markdown.md lists them). Tests keep the scanner equal to markdown-it
// elsewhere, and to the reference there, on every CommonMark spec example and on thousands of
// random notes (test/note/block-scan.test.ts, test/note/commonmark-differential.test.ts).

/** A block token, with the fields of markdown-it's that vaultd's structure reader reads. */
export interface BlockToken {
  type: string;
  tag: string;
  nesting: 1 | 0 | -1;
  level: number;
  map: [number, number] | null;
  markup: string;
  info: string;
  content: string;
  meta: { closed: boolean; column: number } | null;
}

/**
 * Containers nested deeper than this are not opened: their lines are read as paragraph text
 * (markdown-it's `maxNesting`, whose parse instead skips the rest of the container).
 */
export const MAX_NESTING = 1000;

/**
 * The line table of markdown-it's block state for `src`: per line its start, its end, the
 * characters and the columns of its indentation, and the tab correction (0 until a container
 * changes it). `lineMax` is the number of lines; row `lineMax` is a sentinel at the end.
 */
export interface LineTable {
  bMarks: Int32Array;
  eMarks: Int32Array;
  tShift: Int32Array;
  sCount: Int32Array;
  bsCount: Int32Array;
  lineMax: number;
}

const TABLE_KEEP_LINES = 65_536;
type Columns = [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
let sharedColumns: Columns | undefined;

/** Five columns of at least `rows` entries (the shared ones when they are large enough). */
function columns(rows: number): Columns {
  if (sharedColumns !== undefined && sharedColumns[0].length >= rows) return sharedColumns;
  // Shared columns of at least 4,096 rows: notes of up to 4 KB need not count their lines.
  if (rows <= TABLE_KEEP_LINES) rows = Math.max(rows, 4096);
  const column = (): Int32Array => new Int32Array(rows);
  const made: Columns = [column(), column(), column(), column(), column()];
  if (rows <= TABLE_KEEP_LINES) sharedColumns = made;
  return made;
}

/**
 * Build the line table of `src` (normalised markdown: `\n` line endings). Typed arrays sized up
 * front: growing five arrays of 40,000 lines (a 1 MB note) copied them into the old generation
 * again and again. One set of columns serves every parse up to TABLE_KEEP_LINES lines (parses
 * never overlap), so a small note allocates none. The columns may be longer than the table: rows
 * past `lineMax` hold no line of this note, except row `lineMax + 1`, a non-empty row no rule
 * ever reaches (markdown-it's arrays end at `lineMax`).
 * @param src normalised markdown.
 * @param blankBefore lines before this offset (a line's start, or the end) are empty lines.
 */
export function buildLineTable(src: string, blankBefore = 0): LineTable {
  const length = src.length;
  // A note has at most one line more than it has characters: no need to count its lines when
  // the shared columns hold that many rows.
  let rows = length + 3;
  if (sharedColumns === undefined || sharedColumns[0].length < rows) {
    rows = 3;
    for (let i = src.indexOf('\n'); i !== -1; i = src.indexOf('\n', i + 1)) rows++;
  }
  const [bMarks, eMarks, tShift, sCount, bsCount] = columns(rows);
  let line = 0;
  let start = 0;
  // Lines before `blankBefore` read as empty lines, each ending at its own line ending (what the
  // rules read at an empty line's end is that line ending).
  while (start < blankBefore) {
    const newline = src.indexOf('\n', start);
    if (newline === -1 || newline >= blankBefore) break;
    bMarks[line] = newline;
    eMarks[line] = newline;
    tShift[line] = 0;
    sCount[line] = 0;
    bsCount[line] = 0;
    line++;
    start = newline + 1;
  }
  for (start = Math.max(start, blankBefore); start < length;) {
    let pos = start;
    let indent = 0;
    let column = 0;
    for (; pos < length; pos++) {
      const c = src.charCodeAt(pos);
      if (c === 32) column++;
      else if (c === 9) column += 4 - (column % 4);
      else break;
      indent++;
    }
    // White space at the very end of the source is a (blank) line of its own, as CommonMark
    // reads it: an open fence holds it. markdown-it keeps no line for it.
    const newline = pos >= length ? -1 : src.indexOf('\n', pos);
    bMarks[line] = start;
    eMarks[line] = newline === -1 ? length : newline;
    tShift[line] = indent;
    sCount[line] = column;
    bsCount[line] = 0;
    line++;
    if (newline === -1) break;
    start = newline + 1;
  }
  bMarks[line] = length;
  eMarks[line] = length;
  tShift[line] = 0;
  sCount[line] = 0;
  bsCount[line] = 0;
  bMarks[line + 1] = 0;
  eMarks[line + 1] = 1;
  tShift[line + 1] = 0;
  sCount[line + 1] = 0;
  bsCount[line + 1] = 0;
  return { bMarks, eMarks, tShift, sCount, bsCount, lineMax: line };
}

/**
 * What the scanner hands the reader of link reference definitions: its line table and where it
 * is, with the field names of markdown-it's block state.
 */
export type ScanState = Readonly<
  Pick<
    Scan,
    | 'src'
    | 'tokens'
    | 'bMarks'
    | 'eMarks'
    | 'tShift'
    | 'sCount'
    | 'bsCount'
    | 'blkIndent'
    | 'lineMax'
    | 'level'
    | 'endsDefinition'
  >
>;

/**
 * Reads the link reference definition starting at `line` (its tokens go to `scan.tokens`): the
 * line after it, or -1 when there is none. `continuation`: the line goes on with a paragraph that
 * began with a definition, so it may be indented any amount.
 */
export type ReferenceReader = (
  scan: ScanState,
  line: number,
  endLine: number,
  continuation: boolean,
) => number;

/**
 * Read the blocks of `src` (normalised markdown) into `tokens`: every top-level block's opening
 * token, every fence, heading (with its inline token after it) and block quote (opening and
 * closing), as markdown-it's block parser yields them.
 * @param src normalised markdown.
 * @param blankBefore the lines before this offset (a line's start, or the end) are read as empty
 *   lines: the front-matter's.
 * @param tokens where the tokens go.
 * @param sweep takes the tokens of the top-level blocks read so far (and `tokens` is then
 *   emptied), now and then between two top-level blocks: a long note's tokens never pile up (a
 *   1 MB note of prose kept 20,000 of them, old-generation garbage that made its parse 20 times
 *   slower than 100 KB's).
 * @param reference reads a link reference definition (markdown-it's own rule, which reads link
 *   syntax over several lines).
 */
export function scanBlocks(
  src: string,
  blankBefore: number,
  tokens: BlockToken[],
  sweep: (tokens: BlockToken[]) => void,
  reference: ReferenceReader,
): void {
  if (src.length === 0) return;
  const scan = new Scan(src, blankBefore, tokens, sweep, reference);
  try {
    scan.tokenize(0, scan.lineMax);
  } finally {
    // A stack grown for one long quote is not kept.
    if (savedColumns.length > SAVED_KEEP) savedColumns = new Int32Array(1024);
  }
}

// Lines walked by block quotes looking for their end, for the test that keeps it linear.
let quoteSteps = 0;

/**
 * How many lines the block quotes of `src` walk looking for their end (a run of lazy lines
 * skipped at once counts one), for the test that keeps the scan linear in the note's size.
 * @param src normalised markdown.
 * @param reference as for {@link scanBlocks}.
 */
export function quoteStepsForTest(src: string, reference: ReferenceReader): number {
  quoteSteps = 0;
  scanBlocks(src, 0, [], () => undefined, reference);
  return quoteSteps;
}

// Characters thematic-break checks read, for the test that keeps a line of list markers linear.
let hrChars = 0;

/**
 * How many characters the thematic-break checks of `src` read, for the test that keeps them
 * linear in the note's size.
 * @param src normalised markdown.
 * @param reference as for {@link scanBlocks}.
 */
export function hrCharsForTest(src: string, reference: ReferenceReader): number {
  hrChars = 0;
  scanBlocks(src, 0, [], () => undefined, reference);
  return hrChars;
}

/** A heading token's tag by level (one string each, not one per heading). */
const HEADING_TAGS = ['', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6'];

/** Top-level tokens handed to the sweep at a time. */
const SWEEP_TOKENS = 64;

const enum Parent {
  Other,
  Paragraph,
}

const SPACE = 0x20;
const TAB = 0x09;

function isSpace(c: number): boolean {
  return c === SPACE || c === TAB;
}

function token(
  type: string,
  tag: string,
  nesting: 1 | 0 | -1,
  level: number,
  map: [number, number] | null,
): BlockToken {
  return { type, tag, nesting, level, map, markup: '', info: '', content: '', meta: null };
}

// HTML blocks, CommonMark's seven kinds: a start condition on the block's first line, and an end
// condition (null: a blank line ends it). The seventh cannot interrupt a paragraph.
const BLOCK_TAGS =
  'address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|' +
  'dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|' +
  'head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|' +
  'p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul';
const ATTRIBUTE =
  '\\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\\s*=\\s*(?:[^"\'=<>`\\x00-\\x20]+|\'[^\']*\'|"[^"]*"))?';
const OPEN_TAG = `<[A-Za-z][A-Za-z0-9-]*(?:${ATTRIBUTE})*\\s*\\/?>`;
const CLOSE_TAG = '<\\/[A-Za-z][A-Za-z0-9-]*\\s*>';
const HTML_KINDS: readonly (readonly [start: RegExp, end: RegExp | null])[] = [
  [/^<(?:script|pre|style|textarea)(?=\s|>|$)/i, /<\/(?:script|pre|style|textarea)>/i],
  [/^<!--/, /-->/],
  [/^<\?/, /\?>/],
  [/^<![A-Za-z]/, />/],
  [/^<!\[CDATA\[/, /\]\]>/],
  [new RegExp(`^</?(?:${BLOCK_TAGS})(?=\\s|/?>|$)`, 'i'), null],
  [new RegExp(`^(?:${OPEN_TAG}|${CLOSE_TAG})\\s*$`), null],
];

/** The kind of HTML block `text` (a line from its first non-space character) starts, or -1. */
function htmlKind(text: string): number {
  for (let kind = 0; kind < HTML_KINDS.length; kind++) {
    if ((HTML_KINDS[kind] as readonly [RegExp, RegExp | null])[0].test(text)) return kind;
  }
  return -1;
}

// One stack for the line columns block quotes change (two numbers a line: Scan.saveQuoted), kept
// from parse to parse (parses never overlap): a quote 8 deep over 20,000 lines saves 320,000
// numbers, which arrays grown by push copied into the old generation.
let savedColumns = new Int32Array(1024);
const SAVED_KEEP = 65_536;

// Tests only: the four columns of every line saved, in full, and where each open quote's start,
// to check that what a quote puts back is what it found.
let restoreCheck: number[] | undefined;
const restoreBase: number[] = [];

/**
 * Check, until turned off, that every line a block quote puts back gets the columns it had
 * before the quote (a parse that finds otherwise throws).
 * @param on whether to check.
 */
export function checkQuoteRestoresForTest(on: boolean): void {
  restoreCheck = on ? [] : undefined;
  restoreBase.length = 0;
}

class Scan {
  readonly src: string;
  readonly tokens: BlockToken[];
  readonly bMarks: Int32Array;
  readonly eMarks: Int32Array;
  readonly tShift: Int32Array;
  readonly sCount: Int32Array;
  readonly bsCount: Int32Array;
  lineMax: number;
  /** Columns of indentation the current container's content has. */
  blkIndent = 0;
  /**
   * The content columns of the containers around the open list items, outermost first (each
   * item's container's blkIndent, put back when the item ends): a line less indented than an
   * item's content is judged against the innermost container it still belongs to. Entries below
   * `outerFloor` belong to the quotes around the current one, whose lines are counted from
   * another column.
   */
  readonly outer: number[] = [];
  outerFloor = 0;
  parent = Parent.Other;
  /** markdown-it's token level: one per open block quote, list and list item. */
  level = 0;
  /** The line after the last block read. */
  line = 0;
  /** Line columns block quotes changed, as they were ({@link Scan.save}), and how many. */
  saved = savedColumns;
  savedTop = 0;
  /** Where each run of lazy lines kept by {@link Scan.keepLazyRun} ends (0: none starts there). */
  lazyRunEnd: Int32Array | undefined;
  /** The quote that kept each run (its id). */
  lazyRunOwner: Int32Array | undefined;
  /** The ids of the open quotes, outermost first (ids grow, so the list is sorted). */
  readonly openQuotes: number[] = [];
  nextQuoteId = 1;
  /** The lines of the note (lineMax before any quote lowers it). */
  readonly lines: number;
  /** The last thematic-break check that failed: its line, marker and the character that stopped it. */
  #hrLine = -1;
  #hrMarker = 0;
  #hrStop = 0;

  constructor(
    src: string,
    blankBefore: number,
    tokens: BlockToken[],
    readonly sweep: (tokens: BlockToken[]) => void,
    readonly reference: ReferenceReader,
  ) {
    this.src = src;
    this.tokens = tokens;
    const table = buildLineTable(src, blankBefore);
    this.bMarks = table.bMarks;
    this.eMarks = table.eMarks;
    this.tShift = table.tShift;
    this.sCount = table.sCount;
    this.bsCount = table.bsCount;
    this.lineMax = table.lineMax;
    this.lines = table.lineMax;
  }

  isEmpty(line: number): boolean {
    return (
      (this.bMarks[line] as number) + (this.tShift[line] as number) >= (this.eMarks[line] as number)
    );
  }

  skipEmptyLines(from: number): number {
    const max = this.lineMax;
    for (; from < max; from++) {
      if (
        (this.bMarks[from] as number) + (this.tShift[from] as number) <
        (this.eMarks[from] as number)
      )
        break;
    }
    return from;
  }

  skipSpaces(pos: number): number {
    const src = this.src;
    while (pos < src.length && isSpace(src.charCodeAt(pos))) pos++;
    return pos;
  }

  skipChars(pos: number, code: number): number {
    const src = this.src;
    while (pos < src.length && src.charCodeAt(pos) === code) pos++;
    return pos;
  }

  /** The blocks from `startLine` up to `endLine`, in the current container. */
  tokenize(startLine: number, endLine: number): void {
    let line = startLine;
    while (line < endLine) {
      line = this.skipEmptyLines(line);
      this.line = line;
      if (line >= endLine) break;
      // A line less indented than the container's content ends it.
      if ((this.sCount[line] as number) < this.blkIndent) break;
      if (this.level >= MAX_NESTING) {
        // Containers this deep are not opened: their lines are read as paragraph text, and the
        // container they are in ends where it would (markdown-it skips to the container's end,
        // which for a list item is the note's end: a call after the deep part was lost).
        this.paragraph(line, endLine);
        line = this.line;
        continue;
      }
      if (this.level === 0 && this.tokens.length >= SWEEP_TOKENS) {
        this.sweep(this.tokens);
        this.tokens.length = 0;
      }
      this.block(line, endLine);
      line = this.line;
      if (line < endLine && this.isEmpty(line)) {
        line++;
        this.line = line;
      }
    }
  }

  /** The block starting at `line` (not empty, not less indented than the container). */
  block(line: number, endLine: number): void {
    if ((this.sCount[line] as number) - this.blkIndent >= 4) {
      this.code(line, endLine);
      return;
    }
    const start = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const c = this.src.charCodeAt(start);
    switch (c) {
      case 0x60: // `
      case 0x7e: // ~
        if (this.fence(line, endLine)) return;
        break;
      case 0x3e: // >
        this.blockquote(line, endLine);
        return;
      case 0x2a: // *
      case 0x2d: // -
        if (this.isHr(line)) {
          this.hr(line);
          return;
        }
        if (this.list(line, endLine)) return;
        break;
      case 0x5f: // _
        if (this.isHr(line)) {
          this.hr(line);
          return;
        }
        break;
      case 0x2b: // +
        if (this.list(line, endLine)) return;
        break;
      case 0x5b: // [
        if (this.definitions(line, endLine)) return;
        break;
      case 0x3c: // <
        if (this.htmlBlock(line, endLine)) return;
        break;
      case 0x23: // #
        if (this.heading(line)) return;
        break;
      default:
        if (c >= 0x30 && c <= 0x39 && this.list(line, endLine)) return;
    }
    this.paragraph(line, endLine);
  }

  /**
   * The link reference definitions starting at `start`, and the paragraph they begin: whether
   * there was one. In CommonMark definitions are taken off the start of a paragraph: a line that
   * goes on with that paragraph is another definition or paragraph text, never a block's start
   * (markdown-it starts a block there: an ordered item not numbered 1, an empty item, an HTML
   * block of the seventh kind, whose end is a blank line, so it could take the fence after it).
   * A setext underline right after definitions underlines nothing: `===` is text, `---` a
   * thematic break.
   */
  definitions(start: number, endLine: number): boolean {
    let line = start;
    for (;;) {
      const at = (this.bMarks[line] as number) + (this.tShift[line] as number);
      if (!mayStartReference(this.src, at)) break;
      const after = this.reference(this, line, endLine, line !== start);
      if (after < 0) break;
      line = this.line = after;
      if (line >= endLine || this.isEmpty(line)) return true;
      // A line an enclosing quote made lazy goes on with the paragraph.
      if ((this.sCount[line] as number) >= 0 && this.endsParagraph(line)) return true;
    }
    if (line === start) return false;
    this.paragraph(line, endLine);
    return true;
  }

  /** Whether a block that ends a paragraph starts on `line`. */
  endsParagraph(line: number): boolean {
    const oldParent = this.parent;
    this.parent = Parent.Paragraph;
    const ends = this.interrupts(line);
    this.parent = oldParent;
    return ends;
  }

  /**
   * Whether `line` ends the lines a link reference definition is read from (CommonMark's
   * paragraph): a block that ends a paragraph starts on it, or it is a setext underline (a
   * paragraph's definitions are read from the lines before it, whatever it then is). Lines an
   * enclosing quote made lazy, and lines indented four columns past the container's, never get
   * here.
   */
  endsDefinition(line: number): boolean {
    const sCount = this.sCount[line] as number;
    return (sCount >= this.blkIndent && this.setextLevel(line) > 0) || this.endsParagraph(line);
  }

  /** The level of the setext heading `line` underlines (a run of `=` or `-`), or 0. */
  setextLevel(line: number): number {
    let pos = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const max = this.eMarks[line] as number;
    const marker = this.src.charCodeAt(pos);
    if (pos >= max || (marker !== 0x2d && marker !== 0x3d)) return 0;
    pos = this.skipSpaces(this.skipChars(pos, marker));
    if (pos < max) return 0;
    return marker === 0x3d ? 1 : 2;
  }

  /**
   * Whether `line` ends a paragraph or a block quote's lazy lines: a fence, a block quote, a
   * thematic break, a list item, an HTML block of the first six kinds, or an ATX heading starts
   * on it (markdown-it's terminator rules of `paragraph`, `blockquote` and `reference`). With
   * `list`, whether it ends a list: only a fence, a block quote or a thematic break does.
   */
  interrupts(line: number, list = false): boolean {
    // Indented code ends nothing. A line less indented than the list item's content is indented
    // from the innermost container it belongs to (CommonMark; markdown-it counts from the item).
    const sCount = this.sCount[line] as number;
    if (sCount - (sCount >= this.blkIndent ? this.blkIndent : this.belongsTo(sCount)) >= 4)
      return false;
    const pos = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const c = this.src.charCodeAt(pos);
    switch (c) {
      case 0x60:
      case 0x7e:
        return this.opensFence(line);
      case 0x3e:
        return true;
      case 0x2a:
      case 0x2d:
        return this.isHr(line) || (!list && this.listInterrupts(line));
      case 0x5f:
        return this.isHr(line);
      case 0x2b:
        return !list && this.listInterrupts(line);
      case 0x3c: {
        if (list) return false;
        const kind = htmlKind(this.src.slice(pos, this.eMarks[line]));
        return kind >= 0 && kind < 6;
      }
      case 0x23:
        return !list && this.opensHeading(line);
      default:
        return !list && c >= 0x30 && c <= 0x39 && this.listInterrupts(line);
    }
  }

  code(startLine: number, endLine: number): void {
    let nextLine = startLine + 1;
    let last = nextLine;
    while (nextLine < endLine) {
      if (this.isEmpty(nextLine)) {
        nextLine++;
        continue;
      }
      if ((this.sCount[nextLine] as number) - this.blkIndent >= 4) {
        nextLine++;
        last = nextLine;
        continue;
      }
      break;
    }
    this.line = last;
    if (this.level === 0) this.tokens.push(token('code_block', 'code', 0, 0, [startLine, last]));
  }

  /** The fence's opening run (3 or more backticks or tildes), or 0 when `line` opens none. */
  fenceRun(line: number): number {
    const src = this.src;
    const pos = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const max = this.eMarks[line] as number;
    if (pos + 3 > max) return 0;
    const marker = src.charCodeAt(pos);
    if (marker !== 0x60 && marker !== 0x7e) return 0;
    const end = this.skipChars(pos, marker);
    const run = end - pos;
    if (run < 3) return 0;
    // A backtick fence's info string holds no backtick.
    if (marker === 0x60) {
      for (let i = end; i < max; i++) if (src.charCodeAt(i) === 0x60) return 0;
    }
    return run;
  }

  opensFence(line: number): boolean {
    return this.fenceRun(line) > 0;
  }

  fence(startLine: number, endLine: number): boolean {
    const run = this.fenceRun(startLine);
    if (run === 0) return false;
    const src = this.src;
    const at = (this.bMarks[startLine] as number) + (this.tShift[startLine] as number);
    const marker = src.charCodeAt(at);
    // The usual marker and info string as constants, not new strings: each fence's outlives the
    // parse (bench/README.md, item 43).
    const markup = run === 3 ? (marker === 0x60 ? '```' : '~~~') : src.slice(at, at + run);
    const infoEnd = this.eMarks[startLine] as number;
    const info =
      infoEnd - at - run === 4 && src.startsWith('json', at + run)
        ? 'json'
        : src.slice(at + run, infoEnd);
    let nextLine = startLine;
    let closed = false;
    for (;;) {
      nextLine++;
      if (nextLine >= endLine) break;
      const from = (this.bMarks[nextLine] as number) + (this.tShift[nextLine] as number);
      const max = this.eMarks[nextLine] as number;
      // A non-empty line less indented than the container ends the container, and the fence.
      if (from < max && (this.sCount[nextLine] as number) < this.blkIndent) break;
      if (src.charCodeAt(from) !== marker) continue;
      if ((this.sCount[nextLine] as number) - this.blkIndent >= 4) continue;
      const pos = this.skipChars(from, marker);
      if (pos - from < run) continue;
      if (this.skipSpaces(pos) < max) continue;
      closed = true;
      break;
    }
    this.line = nextLine + (closed ? 1 : 0);
    const fence = token('fence', 'code', 0, this.level, [startLine, this.line]);
    fence.info = info;
    fence.markup = markup;
    fence.content = this.fenceContent(startLine + 1, nextLine, this.sCount[startLine] as number);
    fence.meta = { closed, column: at - (src.lastIndexOf('\n', at - 1) + 1) };
    this.tokens.push(fence);
    return true;
  }

  blockquote(startLine: number, endLine: number): void {
    const src = this.src;
    const { bMarks, bsCount, sCount, tShift } = this;
    const oldLineMax = this.lineMax;
    // The lines the quote changes, each with its four columns as they were.
    const base = this.savedTop;
    if (restoreCheck !== undefined) restoreBase.push(restoreCheck.length);
    const oldParent = this.parent;
    this.parent = Parent.Other;
    this.openQuotes.push(this.nextQuoteId++);
    let lastLineEmpty = false;
    // The first of the lines just read that an enclosing quote had already made lazy, or -1.
    let runStart = -1;
    let nextLine = startLine;
    for (; nextLine < endLine; nextLine++) {
      quoteSteps++;
      const lineCount = sCount[nextLine] as number;
      const isOutdented = lineCount < this.blkIndent;
      let pos = (bMarks[nextLine] as number) + (tShift[nextLine] as number);
      const max = this.eMarks[nextLine] as number;
      if (lineCount === -1 && pos < max && !lastLineEmpty) {
        // A line an enclosing quote made lazy: that quote found it starts no block, judged from
        // the container outside it (the innermost one the line belongs to, as CommonMark judges
        // a lazy line once), so it is lazy in every quote nested in that one too. markdown-it
        // judges it again in each, with its indentation lost: an indented fence or HTML block
        // there ended the inner quotes. The first quote to read a run of them keeps where the
        // run ends, and the quotes inside skip it: without that, a run of lazy lines under 1,000
        // quotes was read 1,000 times (196 KB: 14 s; markdown-it 39 s).
        const end = this.lazyRunEnd?.[nextLine] ?? 0;
        if (runStart < 0) runStart = nextLine;
        if (end > nextLine && end <= endLine && this.runHolds(nextLine)) nextLine = end - 1;
        continue;
      }
      if (runStart >= 0) {
        this.keepLazyRun(runStart, nextLine);
        runStart = -1;
      }
      if (pos >= max) break;
      // A `>` indented four columns or more (from the container's content) marks no quote: the
      // line is lazy, or ends the quote (markdown-it reads it as the quote's).
      const at = pos;
      if (src.charCodeAt(pos++) === 0x3e && !isOutdented && lineCount - this.blkIndent < 4) {
        // A `>` line: the quote's content starts after the marker and one optional space.
        let initial = lineCount + 1;
        let spaceAfterMarker = false;
        let adjustTab = false;
        const after = src.charCodeAt(pos);
        if (after === SPACE) {
          pos++;
          initial++;
          spaceAfterMarker = true;
        } else if (after === TAB) {
          spaceAfterMarker = true;
          if (((bsCount[nextLine] as number) + initial) % 4 === 3) {
            pos++;
            initial++;
          } else {
            adjustTab = true;
          }
        }
        let offset = initial;
        this.saveQuoted(nextLine, pos - at - 1, spaceAfterMarker);
        bMarks[nextLine] = pos;
        for (; pos < max; pos++) {
          const c = src.charCodeAt(pos);
          if (c === TAB)
            offset += 4 - ((offset + (bsCount[nextLine] as number) + (adjustTab ? 1 : 0)) % 4);
          else if (c === SPACE) offset++;
          else break;
        }
        lastLineEmpty = pos >= max;
        // The column the quote's content starts at in the line as written: an enclosing quote's
        // too (markdown-it counts from that quote's content, so tabs in a quote in a quote
        // reached the wrong column).
        bsCount[nextLine] =
          (bsCount[nextLine] as number) + lineCount + 1 + (spaceAfterMarker ? 1 : 0);
        sCount[nextLine] = offset - initial;
        tShift[nextLine] = pos - (bMarks[nextLine] as number);
        continue;
      }
      // A line with no `>` after an empty quoted line ends the quote.
      if (lastLineEmpty) break;
      if (this.interrupts(nextLine)) {
        this.lineMax = nextLine;
        if (this.blkIndent !== 0) {
          this.saveCount(nextLine);
          sCount[nextLine] = lineCount - this.blkIndent;
        }
        break;
      }
      // A lazy line: a paragraph's continuation inside the quote, never a block's start.
      this.saveCount(nextLine);
      sCount[nextLine] = -1;
    }
    if (runStart >= 0) this.keepLazyRun(runStart, nextLine);
    const oldIndent = this.blkIndent;
    this.blkIndent = 0;
    const oldFloor = this.outerFloor;
    this.outerFloor = this.outer.length;
    const map: [number, number] = [startLine, 0];
    this.tokens.push(token('blockquote_open', 'blockquote', 1, this.level, map));
    this.level++;
    this.tokenize(startLine, nextLine);
    this.level--;
    this.openQuotes.pop();
    this.outerFloor = oldFloor;
    this.tokens.push(token('blockquote_close', 'blockquote', -1, this.level, null));
    this.lineMax = oldLineMax;
    this.parent = oldParent;
    map[1] = this.line;
    // Put back the lines the enclosing container reads again: the ones from where the quote's
    // blocks ended (a line they did not take, such as a lazy line that starts a block of its own,
    // or the line that ended the quote) and the one before. Blocks go forward, so no rule reads
    // the lines the quote's blocks took. The records are in line order: walk back from the top.
    this.restore(base, this.line - 1);
    this.savedTop = base;
    this.blkIndent = oldIndent;
  }

  /**
   * Keep that the lines [start, end) are lazy lines of an enclosing quote that end no quote: the
   * quotes nested in the one that read them (the open quote) skip them at once, while it is open.
   * A quote walks every line it may span before its blocks are read, and its blocks may end before
   * those lines (a lazy line after a fence ends it): the quotes that read them afterwards are
   * others, for which the run says nothing.
   */
  keepLazyRun(start: number, end: number): void {
    this.lazyRunEnd ??= new Int32Array(this.lines + 2);
    this.lazyRunOwner ??= new Int32Array(this.lines + 2);
    if (start < this.lazyRunEnd.length) {
      this.lazyRunEnd[start] = end;
      this.lazyRunOwner[start] = this.openQuotes[this.openQuotes.length - 1] as number;
    }
  }

  /** Whether the quote that kept the run of lazy lines starting at `line` is still open. */
  runHolds(line: number): boolean {
    const owner = this.lazyRunOwner?.[line] ?? 0;
    const open = this.openQuotes;
    let low = 0;
    let high = open.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const id = open[mid] as number;
      if (id === owner) return true;
      if (id < owner) low = mid + 1;
      else high = mid - 1;
    }
    return false;
  }

  /**
   * Room for `n` more numbers on the stack of saved columns.
   * @param n how many.
   */
  room(n: number): Int32Array {
    if (this.savedTop + n > this.saved.length) {
      const larger = new Int32Array(this.saved.length * 2);
      larger.set(this.saved);
      this.saved = savedColumns = larger;
    }
    return this.saved;
  }

  /**
   * Keep `line`'s sCount as it is (a lazy line's, or the line that ends the quote: the one column
   * a quote changes there), for the quote to put back when it ends.
   */
  saveCount(line: number): void {
    if (restoreCheck !== undefined) restoreCheck.push(...this.columnsOf(line));
    const saved = this.room(2);
    saved[this.savedTop] = line * 2;
    saved[this.savedTop + 1] = this.sCount[line] as number;
    this.savedTop += 2;
  }

  /**
   * Keep `line`'s four columns as they are, before a quote takes its `>` (and `extra` more
   * characters, the space or tab after it, which `spaceAfterMarker` says followed it) and changes
   * them. Two numbers, the line and its indentation before the marker (characters and columns),
   * from which the rest is worked out when the quote ends: the columns the quote writes are then
   * still in the table for every line it puts back (below). Five numbers a line made the stack of
   * a quote 8 deep over 1 MB 2.2 MB, over this machine's 2 MB second-level cache, and the parse
   * 1.6 times slower than a 100 KB note's per byte (bench/README.md, item 42). A line indented
   * by 32,768 characters or 16,384 columns or more would keep all four in six numbers: none is
   * today (a `>` is read within 4 columns of its container's content, which nested list items
   * move at most a few thousand columns in before MAX_NESTING), but the stack stays exact if
   * that changes.
   */
  saveQuoted(line: number, extra: number, spaceAfterMarker: boolean): void {
    if (restoreCheck !== undefined) restoreCheck.push(...this.columnsOf(line));
    const shift = this.tShift[line] as number;
    const count = this.sCount[line] as number;
    if (shift < 0x8000 && count >= 0 && count < 0x4000) {
      const saved = this.room(2);
      saved[this.savedTop] = line * 2 + 1;
      saved[this.savedTop + 1] = (count << 17) | (shift << 2) | (spaceAfterMarker ? 2 : 0) | extra;
      this.savedTop += 2;
      return;
    }
    const saved = this.room(6);
    const top = this.savedTop;
    saved[top] = this.bMarks[line] as number;
    saved[top + 1] = this.bsCount[line] as number;
    saved[top + 2] = count;
    saved[top + 3] = shift;
    saved[top + 4] = line * 2 + 1;
    saved[top + 5] = -1;
    this.savedTop = top + 6;
  }

  /**
   * Put back the columns the records above `base` kept, for the lines from `from` on (the records
   * are in line order: walk back from the top). What a quote wrote on a line it puts back is
   * still in the table: a rule inside the quote that changes a line's columns (a list item's
   * first line, a quote inside) puts them back before the quote ends, for every line from where
   * its own blocks ended, and the quote's blocks end at or after those.
   */
  restore(base: number, from: number): void {
    const { bMarks, bsCount, sCount, tShift, saved } = this;
    let check = restoreCheck === undefined ? -1 : restoreCheck.length;
    for (let i = this.savedTop; i > base;) {
      const tag = saved[i - 2] as number;
      const line = tag >> 1;
      if (line < from) break;
      const value = saved[i - 1] as number;
      if ((tag & 1) === 0) {
        sCount[line] = value;
        i -= 2;
      } else if (value >= 0) {
        const count = value >> 17;
        const shift = (value >> 2) & 0x7fff;
        bMarks[line] = (bMarks[line] as number) - shift - 1 - (value & 1);
        bsCount[line] = (bsCount[line] as number) - count - 1 - ((value >> 1) & 1);
        sCount[line] = count;
        tShift[line] = shift;
        i -= 2;
      } else {
        bMarks[line] = saved[i - 6] as number;
        bsCount[line] = saved[i - 5] as number;
        sCount[line] = saved[i - 4] as number;
        tShift[line] = saved[i - 3] as number;
        i -= 6;
      }
      if (restoreCheck !== undefined) {
        check -= 5;
        const kept = restoreCheck.slice(check, check + 5);
        const now = this.columnsOf(line);
        if (kept.join() !== now.join())
          throw new Error(`line ${line} put back as ${now.join()}, was ${kept.join()}`);
      }
    }
    if (restoreCheck !== undefined) restoreCheck.length = restoreBase.pop() as number;
  }

  /** A line and its four columns (for the check of {@link checkQuoteRestoresForTest}). */
  columnsOf(line: number): number[] {
    return [
      line,
      this.bMarks[line] as number,
      this.bsCount[line] as number,
      this.sCount[line] as number,
      this.tShift[line] as number,
    ];
  }

  isHr(line: number): boolean {
    const src = this.src;
    const max = this.eMarks[line] as number;
    let pos = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const marker = src.charCodeAt(pos++);
    if (marker !== 0x2a && marker !== 0x2d && marker !== 0x5f) return false;
    // A line of list markers (`- - - … x`) is asked again at each of its items, from further
    // along: the character that stopped the last scan stops this one too, so it is remembered
    // (without it, 1 MB of `- ` took 4 s: every item scanned the rest of the line).
    if (line === this.#hrLine && marker === this.#hrMarker && pos <= this.#hrStop) return false;
    let count = 1;
    while (pos < max) {
      hrChars++;
      const c = src.charCodeAt(pos++);
      if (c === marker) count++;
      else if (!isSpace(c)) {
        this.#hrLine = line;
        this.#hrMarker = marker;
        this.#hrStop = pos - 1;
        return false;
      }
    }
    return count >= 3;
  }

  hr(line: number): void {
    this.line = line + 1;
    if (this.level === 0) this.tokens.push(token('hr', 'hr', 0, 0, [line, line + 1]));
  }

  /** Just after a bullet list marker (`-`, `+`, `*` and a space or the line's end), or -1. */
  bulletEnd(line: number): number {
    const max = this.eMarks[line] as number;
    let pos = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const marker = this.src.charCodeAt(pos++);
    if (marker !== 0x2a && marker !== 0x2d && marker !== 0x2b) return -1;
    if (pos < max && !isSpace(this.src.charCodeAt(pos))) return -1;
    return pos;
  }

  /** Just after an ordered list marker (1–9 digits, `.` or `)`, a space or the line's end), or -1. */
  orderedEnd(line: number): number {
    const src = this.src;
    const start = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const max = this.eMarks[line] as number;
    let pos = start;
    if (pos + 1 >= max) return -1;
    let c = src.charCodeAt(pos++);
    if (c < 0x30 || c > 0x39) return -1;
    for (;;) {
      if (pos >= max) return -1;
      c = src.charCodeAt(pos++);
      if (c >= 0x30 && c <= 0x39) {
        if (pos - start >= 10) return -1;
        continue;
      }
      if (c === 0x29 || c === 0x2e) break;
      return -1;
    }
    if (pos < max && !isSpace(src.charCodeAt(pos))) return -1;
    return pos;
  }

  /**
   * The content column of the innermost open container a line indented `sCount` columns (less
   * than the current list item's content) still belongs to.
   */
  belongsTo(sCount: number): number {
    // The columns grow inward: the last one not past `sCount`, by bisection (a paragraph's lazy
    // lines under lists 400 deep would walk the whole list at every line).
    const outer = this.outer;
    let low = this.outerFloor;
    let high = outer.length - 1;
    let found = 0;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const column = outer[mid] as number;
      if (column <= sCount) {
        found = column;
        low = mid + 1;
      } else high = mid - 1;
    }
    return found;
  }

  /** Whether a list item starting on `line` ends the paragraph or quote before it. */
  listInterrupts(line: number): boolean {
    const sCount = this.sCount[line] as number;
    // Only an empty item, or an ordered one not numbered 1, cannot interrupt a paragraph.
    const paragraph = this.parent === Parent.Paragraph && sCount >= this.blkIndent;
    let after = this.orderedEnd(line);
    if (after >= 0) {
      if (paragraph) {
        const start = (this.bMarks[line] as number) + (this.tShift[line] as number);
        if (Number(this.src.slice(start, after - 1)) !== 1) return false;
      }
    } else {
      after = this.bulletEnd(line);
      if (after < 0) return false;
    }
    return !paragraph || this.skipSpaces(after) < (this.eMarks[line] as number);
  }

  list(startLine: number, endLine: number): boolean {
    const src = this.src;
    const { bMarks, tShift, sCount } = this;
    let nextLine = startLine;
    let posAfterMarker = this.orderedEnd(nextLine);
    const ordered = posAfterMarker >= 0;
    if (!ordered) {
      posAfterMarker = this.bulletEnd(nextLine);
      if (posAfterMarker < 0) return false;
    }
    const markerChar = src.charCodeAt(posAfterMarker - 1);
    const map: [number, number] = [startLine, 0];
    if (this.level === 0) {
      const type = ordered ? 'ordered_list_open' : 'bullet_list_open';
      this.tokens.push(token(type, ordered ? 'ol' : 'ul', 1, 0, map));
    }
    this.level++;
    const oldParent = this.parent;
    this.parent = Parent.Other;
    // Where the last item read ends when it is empty (the line after its empty line), or -1.
    let emptyEnd = -1;
    while (nextLine < endLine) {
      let pos = posAfterMarker;
      const max = this.eMarks[nextLine] as number;
      const initial =
        (sCount[nextLine] as number) +
        posAfterMarker -
        ((bMarks[nextLine] as number) + (tShift[nextLine] as number));
      let offset = initial;
      for (; pos < max; pos++) {
        const c = src.charCodeAt(pos);
        if (c === TAB) offset += 4 - ((offset + (this.bsCount[nextLine] as number)) % 4);
        else if (c === SPACE) offset++;
        else break;
      }
      const contentStart = pos;
      // An item's content starts 1–4 columns after its marker (1 when the item is empty, or
      // when more spaces follow: the content is then indented code).
      let indentAfterMarker = contentStart >= max ? 1 : offset - initial;
      if (indentAfterMarker > 4) indentAfterMarker = 1;
      const indent = initial + indentAfterMarker;
      this.level++;
      const oldTShift = tShift[nextLine] as number;
      const oldSCount = sCount[nextLine] as number;
      this.outer.push(this.blkIndent);
      this.blkIndent = indent;
      tShift[nextLine] = contentStart - (bMarks[nextLine] as number);
      sCount[nextLine] = offset;
      emptyEnd = -1;
      if (contentStart >= max && this.isEmpty(nextLine + 1)) {
        // An item that starts with an empty line and goes on with another is empty. The list
        // goes on when another item follows any number of empty lines, as after any other item
        // (markdown-it looked for it on the second line only, and began a new list); when none
        // does, the list ends where markdown-it ends it.
        emptyEnd = Math.min(this.line + 2, endLine);
        this.line = Math.min(this.skipEmptyLines(emptyEnd), endLine);
      } else {
        this.tokenize(nextLine, endLine);
      }
      this.blkIndent = this.outer.pop() as number;
      tShift[nextLine] = oldTShift;
      sCount[nextLine] = oldSCount;
      this.level--;
      nextLine = this.line;
      if (nextLine >= endLine) break;
      if ((sCount[nextLine] as number) < this.blkIndent) break;
      if ((sCount[nextLine] as number) - this.blkIndent >= 4) break;
      if (this.interrupts(nextLine, true)) break;
      // The next item, with the same kind of marker.
      posAfterMarker = ordered ? this.orderedEnd(nextLine) : this.bulletEnd(nextLine);
      if (posAfterMarker < 0) break;
      if (markerChar !== src.charCodeAt(posAfterMarker - 1)) break;
    }
    this.level--;
    if (emptyEnd >= 0 && nextLine > emptyEnd) nextLine = emptyEnd;
    map[1] = nextLine;
    this.line = nextLine;
    this.parent = oldParent;
    return true;
  }

  htmlBlock(startLine: number, endLine: number): boolean {
    const src = this.src;
    let text = src.slice(
      (this.bMarks[startLine] as number) + (this.tShift[startLine] as number),
      this.eMarks[startLine],
    );
    const kind = htmlKind(text);
    if (kind < 0) return false;
    const end = (HTML_KINDS[kind] as readonly [RegExp, RegExp | null])[1];
    let nextLine = startLine + 1;
    if (end === null || !end.test(text)) {
      for (; nextLine < endLine; nextLine++) {
        if ((this.sCount[nextLine] as number) < this.blkIndent) {
          if (end === null || !this.isEmpty(nextLine)) break;
        }
        text = src.slice(
          (this.bMarks[nextLine] as number) + (this.tShift[nextLine] as number),
          this.eMarks[nextLine],
        );
        if (end === null ? text.length === 0 : end.test(text)) {
          if (text.length !== 0) nextLine++;
          break;
        }
      }
    }
    this.line = nextLine;
    if (this.level === 0) this.tokens.push(token('html_block', '', 0, 0, [startLine, nextLine]));
    return true;
  }

  /** The level of the ATX heading `line` opens (1–6), or 0. */
  headingLevel(line: number): number {
    const src = this.src;
    let pos = (this.bMarks[line] as number) + (this.tShift[line] as number);
    const max = this.eMarks[line] as number;
    if (src.charCodeAt(pos) !== 0x23 || pos >= max) return 0;
    let level = 1;
    let c = src.charCodeAt(++pos);
    while (c === 0x23 && pos < max && level <= 6) {
      level++;
      c = src.charCodeAt(++pos);
    }
    if (level > 6 || (pos < max && !isSpace(c))) return 0;
    return level;
  }

  opensHeading(line: number): boolean {
    return this.headingLevel(line) > 0;
  }

  heading(line: number): boolean {
    const level = this.headingLevel(line);
    if (level === 0) return false;
    const src = this.src;
    const pos = (this.bMarks[line] as number) + (this.tShift[line] as number) + level;
    // The text, without trailing spaces and a closing run of `#` after a space.
    let max = this.eMarks[line] as number;
    while (max > pos && isSpace(src.charCodeAt(max - 1))) max--;
    let closing = max;
    while (closing > pos && src.charCodeAt(closing - 1) === 0x23) closing--;
    if (closing > pos && isSpace(src.charCodeAt(closing - 1))) max = closing;
    this.line = line + 1;
    this.pushHeading(level, [line, line + 1], src.slice(pos, max));
    return true;
  }

  /** A heading's tokens; its text is taken as written (the structure's reader trims it). */
  pushHeading(level: number, map: [number, number], text: string): void {
    this.tokens.push(token('heading_open', HEADING_TAGS[level] as string, 1, this.level, map));
    const inline = token('inline', '', 0, this.level + 1, [map[0], map[1]]);
    inline.content = text;
    this.tokens.push(inline);
  }

  /** A paragraph, or a setext heading when an underline comes before the paragraph ends. */
  paragraph(startLine: number, endLine: number): void {
    const oldParent = this.parent;
    this.parent = Parent.Paragraph;
    let level = 0;
    let nextLine = startLine + 1;
    for (; nextLine < endLine && !this.isEmpty(nextLine); nextLine++) {
      const sCount = this.sCount[nextLine] as number;
      // Indented code cannot interrupt a paragraph.
      if (sCount - this.blkIndent > 3) continue;
      if (sCount >= this.blkIndent) {
        level = this.setextLevel(nextLine);
        if (level > 0) break;
      }
      // A quote's lazy line goes on with the paragraph.
      if (sCount < 0) continue;
      if (this.interrupts(nextLine)) break;
    }
    this.parent = oldParent;
    if (level > 0) {
      this.line = nextLine + 1;
      const text = this.getLines(startLine, nextLine, this.blkIndent, false);
      this.pushHeading(level, [startLine, this.line], text);
      return;
    }
    this.line = nextLine;
    if (this.level === 0)
      this.tokens.push(token('paragraph_open', 'p', 1, 0, [startLine, nextLine]));
  }

  /**
   * A fence's content, lines [begin, end) with up to `indent` columns of white space taken off
   * each (the opener's indentation from its container's start), as CommonMark reads it where
   * markdown-it does not: a tab a quote's marker took one column of gives its other columns as
   * spaces, a blank line in a list item is empty (the item takes its white space), and every line
   * ends with a line ending, the note's last one included.
   */
  fenceContent(begin: number, end: number, indent: number): string {
    const src = this.src;
    let out = '';
    // A run of lines taken whole, their line endings with them: one slice of the note for them
    // all. Appending each line and a line ending made a tree of strings that the first search
    // of the content copied into one (a note of 12,000 calls: two more strings a call to trace
    // and copy while the parse went on; bench/README.md, item 42).
    let runFrom = 0;
    let runTo = -1;
    for (let line = begin; line < end; line++) {
      let pos = this.bMarks[line] as number;
      const max = this.eMarks[line] as number;
      if (this.blkIndent > 0 && pos + (this.tShift[line] as number) >= max) {
        if (runTo >= 0) out += src.slice(runFrom, runTo);
        runTo = -1;
        out += '\n';
        continue;
      }
      // A quote's marker took one column of the tab after it (its optional space).
      let partial = src.charCodeAt(pos) === TAB && src.charCodeAt(pos - 1) === 0x3e;
      let left = indent;
      if (!partial) {
        // Spaces first (most lines): a column each.
        while (left > 0 && pos < max && src.charCodeAt(pos) === SPACE) {
          pos++;
          left--;
        }
        if (left === 0 || src.charCodeAt(pos) !== TAB) {
          if (pos === runTo && max < src.length) {
            // The line goes on the run (`src[max]` is its line ending).
            runTo = max + 1;
            continue;
          }
          if (runTo >= 0) out += src.slice(runFrom, runTo);
          if (max < src.length) {
            runFrom = pos;
            runTo = max + 1;
          } else {
            runTo = -1;
            out += `${src.slice(pos, max)}\n`;
          }
          continue;
        }
      }
      if (runTo >= 0) out += src.slice(runFrom, runTo);
      runTo = -1;
      // A tab reaches the next multiple of 4 of its column in the line as written.
      let column = 0;
      for (let i = src.lastIndexOf('\n', pos - 1) + 1; i < pos; i++)
        column = src.charCodeAt(i) === TAB ? column + 4 - (column % 4) : column + 1;
      if (partial) column++;
      for (; left > 0 && pos < max; left--) {
        const c = src.charCodeAt(pos);
        if (c === SPACE) {
          pos++;
          column++;
        } else if (c === TAB) {
          column++;
          partial = column % 4 !== 0;
          if (!partial) pos++;
        } else break;
      }
      if (partial) {
        out += ' '.repeat(4 - (column % 4));
        pos++;
      }
      out += `${src.slice(pos, max)}\n`;
    }
    if (runTo >= 0) out += src.slice(runFrom, runTo);
    return out;
  }

  /**
   * The text of lines [begin, end) with `indent` columns of indentation taken off each (tabs
   * counted to their columns, a tab cut in two leaving its other columns as spaces).
   */
  getLines(begin: number, end: number, indent: number, keepLastLF: boolean): string {
    if (begin >= end) return '';
    const src = this.src;
    let out = '';
    for (let line = begin; line < end; line++) {
      let lineIndent = 0;
      const lineStart = this.bMarks[line] as number;
      let first = lineStart;
      const last =
        line + 1 < end || keepLastLF
          ? (this.eMarks[line] as number) + 1
          : (this.eMarks[line] as number);
      while (first < last && lineIndent < indent) {
        const c = src.charCodeAt(first);
        if (c === TAB) lineIndent += 4 - ((lineIndent + (this.bsCount[line] as number)) % 4);
        else if (c === SPACE || first - lineStart < (this.tShift[line] as number)) lineIndent++;
        else break;
        first++;
      }
      out +=
        lineIndent > indent
          ? ' '.repeat(lineIndent - indent) + src.slice(first, last)
          : src.slice(first, last);
    }
    return out;
  }
}

/**
 * Whether a link reference definition can start at `pos`: markdown-it's rule reads a label from
 * there up to its first `]`, fails on a `[` before it and wants a `:` right after it. Walking the
 * raw text gives a necessary condition: between two lines of a block the rule skips only
 * container markers and indentation (`>`, spaces, tabs), never a bracket or a backslash, and it
 * skips an escaped character as this does. Only a block that passes goes to the reference reader
 * (which loads markdown-it). Linear: every walk starts at a `[` that begins a line's content and
 * stops at the next bracket.
 */
export function mayStartReference(src: string, pos: number): boolean {
  if (src.charCodeAt(pos) !== 0x5b /* [ */) return false;
  for (let i = pos + 1; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === 0x5b /* [ */) return false;
    if (c === 0x5d /* ] */) return src.charCodeAt(i + 1) === 0x3a; /* : */
    if (c === 0x5c /* \ */) i++;
  }
  return false;
}
