// Characters that could start markup in Obsidian: code, emphasis, links and embeds, HTML, fences,
// tables, math, comments, tags. Backslash-escaping ASCII punctuation is always literal in CommonMark.
const INLINE_MARKUP = /[\\`*_[\]<>~|$%&#]/g;
// Control characters other than tab; tabs become spaces.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;
// A line escapeMarkdownLine leaves as it is: no control character or line break, no white space
// at its start (trimStart's, which is `\s`), no markup character, and no line-start marker.
// eslint-disable-next-line no-control-regex
const PLAIN_LINE = /^(?![\s\-+=]|\d{1,9}[.)])[^\u0000-\u001f\u007f\\`*_[\]<>~|$%&#]*$/;

/**
 * Makes one line of untrusted text (a tool's output, a title) inert as markdown: every character
 * that could open code, a fence, a link, HTML, a heading, a quote, a list or a tag is escaped, so
 * the line renders as the same text and never changes the note's structure.
 * @param line Text without line breaks (any break is turned into a space).
 */
export function escapeMarkdownLine(line: string): string {
  // Most lines need nothing: one test instead of five replacements (bench/README.md, item 37).
  if (PLAIN_LINE.test(line)) return line;
  const text = line
    .replace(CONTROL, '')
    .replace(/[\r\n\t]/g, ' ')
    .trimStart()
    .replace(INLINE_MARKUP, (c) => `\\${c}`);
  // Line-start markers: lists, setext underlines, thematic breaks, ordered lists.
  return text.replace(/^([-+=])/, '\\$1').replace(/^(\d{1,9})([.)])/, '$1\\$2');
}

/**
 * Collapses untrusted text into one short inert line (for titles and link texts).
 * @param text Any text.
 * @param max Maximum length in characters before escaping; default 200.
 */
export function escapeMarkdownTitle(text: string, max = 200): string {
  return escapeMarkdownLine(truncate(text.replace(/\s+/g, ' ').trim(), max));
}

/**
 * Turns untrusted text into inert markdown lines, at most `maxLines` lines and `maxChars` characters.
 * @param text Any text, any line endings.
 * @param maxChars Default 2000.
 * @param maxLines Default 40.
 */
export function escapeMarkdownText(text: string, maxChars = 2000, maxLines = 40): string[] {
  const all = text.replace(CONTROL, '').split(/\r\n|\r|\n/);
  const lines = all.slice(0, maxLines);
  const kept = lines.join('\n');
  const cut = truncate(kept, maxChars);
  const out = cut.split('\n').map(escapeMarkdownLine);
  if (lines.length < all.length || cut.length < kept.length) {
    out.push('*(truncated: the full text is in the JSON block below)*');
  }
  return out;
}

/**
 * Formats a URL as a markdown link destination when it is http or https, percent-encoding every
 * character that could end the destination or the line; otherwise returns null.
 * @param url Untrusted URL text.
 */
export function safeLinkUrl(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  // `href` is ASCII (the URL parser percent-encodes the rest); anything else is dropped.
  return parsed.href.replace(/[^A-Za-z0-9\-._~:/?#@!$&+,;=%*]/g, (c) =>
    c.charCodeAt(0) < 128 ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : '',
  );
}

/**
 * Prefixes lines with `> ` so they stay inside a block quote or callout.
 * @param lines Markdown lines, already inert.
 */
export function quoteLines(lines: readonly string[]): string[] {
  return lines.map((l) => (l === '' ? '>' : `> ${l}`));
}

/**
 * `text` cut to `max` characters with `…` after it when longer, never inside a surrogate pair.
 * @param text any text.
 * @param max the most characters kept.
 */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  // Do not split a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(text.charAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

/**
 * The length of the longest run of backticks in a text (0 without any), by one scan. Not
 * `Math.max(...runs)`: a spread of more than about 120,000 runs overflows the stack, and a tool's
 * output under the default cap holds 128,000 (`` `x`` repeated).
 * @param text any text.
 */
export function longestBacktickRun(text: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 96) {
      run++;
      if (run > longest) longest = run;
    } else {
      run = 0;
    }
  }
  return longest;
}

/**
 * A word as a POSIX shell reads it back unchanged: as it is when it holds only characters no
 * shell treats specially, else in single quotes.
 * @param text any text.
 */
export function shellWord(text: string): string {
  if (/^[\w@%+=:,./-]+$/u.test(text)) return text;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
