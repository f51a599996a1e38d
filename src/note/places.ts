import type { Place } from './types.ts';

/** Where each 0-based line of a text starts ({@link lineStartsOf}). */
export type LineStarts = Readonly<Int32Array>;

/** Converts a 0-based UTF-16 offset of one text into a {@link Place}. */
export type Placer = (offset: number) => Place;

/**
 * Builds a placer for `text`, counting `\r\n`, `\n` and a lone `\r` as one line ending each, as
 * CommonMark does.
 * @param text The note's original text.
 * @param lineStarts where its lines start, when already at hand (the note's structure has them).
 */
export function makePlacer(text: string, lineStarts?: LineStarts): Placer {
  // Built on first use: most notes are placed only when they hold a call or a diagnostic.
  let starts: LineStarts | undefined = lineStarts;
  // The line found last: a note's calls are placed in order, each a few lines after the one
  // before, so the search starts there (bench/README.md, item 42).
  let last = 0;
  return (offset) => {
    starts ??= lineStartsOf(text);
    const at = Math.max(0, Math.min(offset, text.length));
    const line = lineNear(starts, at, last);
    last = line;
    return { line: line + 1, column: at - (starts[line] ?? 0) + 1, offset: at };
  };
}

/**
 * {@link lineOf}, searched for from the line `hint` outwards (1, 2, 4, … lines away, then a
 * binary search within the last step): a few steps for an offset near the hint, and about twice
 * a binary search's for one far from it.
 */
function lineNear(starts: LineStarts, offset: number, hint: number): number {
  const count = starts.length;
  if (hint < 0 || hint >= count) return lineOf(starts, offset);
  let low: number;
  let high: number;
  let step = 1;
  if ((starts[hint] as number) <= offset) {
    // The line is `hint` or one after it.
    low = hint;
    high = hint + 1;
    while (high < count && (starts[high] as number) <= offset) {
      low = high;
      step *= 2;
      high = hint + step;
    }
    high = Math.min(high, count) - 1;
  } else {
    // The line is one before `hint`.
    high = hint - 1;
    low = high;
    while (low > 0 && (starts[low] as number) > offset) {
      high = low - 1;
      step *= 2;
      low = Math.max(0, hint - step);
    }
  }
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((starts[mid] as number) <= offset) low = mid;
    else high = mid - 1;
  }
  return low;
}

/** The 0-based line holding `offset`, by binary search over line starts. */
export function lineOf(starts: LineStarts, offset: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((starts[mid] ?? 0) <= offset) low = mid;
    else high = mid - 1;
  }
  return low;
}

/**
 * Where each line of `text` starts, from `first` on (line 0 starts at `first`), counting `\r\n`,
 * `\n` and a lone `\r` as one line ending each. Counted, then filled into a typed array of that
 * size: a plain array grown one push at a time was copied again and again, into the old
 * generation for a long note, and made a 1 MB note's parse 13× a 100 KB note's instead of 10×
 * (bench/README.md, item 47).
 * @param text the note's text.
 * @param first offset of the first line (1 after a byte order mark).
 */
export function lineStartsOf(text: string, first = 0): Int32Array {
  const cr = text.includes('\r');
  let count = 1;
  if (cr) {
    for (let i = first; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) count++;
    }
  } else {
    for (let i = text.indexOf('\n', first); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  }
  const starts = new Int32Array(count);
  starts[0] = first;
  let n = 1;
  if (cr) {
    for (let i = first; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) starts[n++] = i + 1;
    }
  } else {
    for (let i = text.indexOf('\n', first); i !== -1; i = text.indexOf('\n', i + 1))
      starts[n++] = i + 1;
  }
  return starts;
}

/**
 * The line ending a note uses: that of its first line ending (`\r\n`, a lone `\r`, or `\n`).
 * @param text The note's text.
 */
export function detectLineEnding(text: string): '\r\n' | '\n' | '\r' {
  const lf = text.indexOf('\n');
  // A lone CR first (a classic Mac note): what vaultd adds uses it too. An LF added after the
  // note's last CR made one CRLF of the two, and the blank line before `## Tool Results` was gone.
  const cr = text.indexOf('\r');
  if (cr !== -1 && (lf === -1 || cr < lf - 1)) return '\r';
  return lf > 0 && text.charCodeAt(lf - 1) === 13 ? '\r\n' : '\n';
}

/**
 * Rewrites every line ending of `text` to `eol`.
 * @param text Text with any mix of line endings.
 * @param eol The line ending to use.
 */
export function normalizeLineEndings(text: string, eol: string): string {
  // The common case (LF wanted, none other there) makes no copy: a write-back of 10,000 results
  // copied each one for nothing.
  if (eol === '\n' && !text.includes('\r')) return text;
  return text.replace(/\r\n|\r|\n/g, eol);
}
