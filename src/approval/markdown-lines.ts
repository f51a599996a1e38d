/** One line of a note, with its place relative to top-level fenced code. */
export interface Line {
  /** The line's text without its line ending (a trailing `\r` is dropped). */
  readonly text: string;
  /** 0-based line number. */
  readonly index: number;
  /** The fence this line opens, closes or lies inside; null outside fences. */
  readonly fence: Fence | null;
  /** True for the lines of front-matter at the very start of the note. */
  readonly frontMatter: boolean;
}

/** A top-level fenced code block (not inside a block quote or list indentation of four or more). */
export interface Fence {
  /** The info string of the opening fence, trimmed. */
  readonly info: string;
  readonly openLine: number;
  /** Line of the closing fence; null when the fence is never closed. */
  closeLine: number | null;
  /** The lines between the fences. */
  readonly content: string[];
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/**
 * Split a note into lines (LF or CRLF) and mark front-matter and the lines of top-level fenced
 * code blocks, so a heading, task box or block inside code is never taken for the real thing.
 * @param text the whole note.
 */
export function scanLines(text: string): Line[] {
  const texts = text.split('\n').map((raw) => (raw.endsWith('\r') ? raw.slice(0, -1) : raw));
  const start = frontMatterEnd(texts);
  const lines: Line[] = [];
  let fence: Fence | null = null;
  let marker = '';
  for (const [index, line] of texts.entries()) {
    if (index < start) {
      lines.push({ text: line, index, fence: null, frontMatter: true });
      continue;
    }
    if (fence !== null) {
      lines.push({ text: line, index, fence, frontMatter: false });
      if (isClosingFence(line, marker)) {
        fence.closeLine = index;
        fence = null;
      } else {
        fence.content.push(line);
      }
      continue;
    }
    const open = FENCE_OPEN.exec(line);
    const run = open?.[1] ?? '';
    const info = open?.[2] ?? '';
    if (open !== null && !(run.startsWith('`') && info.includes('`'))) {
      fence = { info: info.trim(), openLine: index, closeLine: null, content: [] };
      marker = run;
      lines.push({ text: line, index, fence, frontMatter: false });
      continue;
    }
    lines.push({ text: line, index, fence: null, frontMatter: false });
  }
  return lines;
}

function isClosingFence(line: string, marker: string): boolean {
  const match = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
  const run = match?.[1];
  return run !== undefined && run[0] === marker[0] && run.length >= marker.length;
}

// Index of the first line after front-matter (`---` … `---` or `...` at the very start), or 0.
function frontMatterEnd(lines: readonly string[]): number {
  if (lines[0]?.replace(/^\uFEFF/, '').trimEnd() !== '---') return 0;
  for (let i = 1; i < lines.length; i += 1) {
    const text = lines[i]?.trimEnd();
    if (text === '---' || text === '...') return i + 1;
  }
  return 0;
}

/**
 * The longest run of backticks in a text.
 * @param text any text.
 */
export function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return longest;
}
