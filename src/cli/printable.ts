// Characters a terminal acts on instead of showing: C0 controls (ESC starts the sequences that
// move the cursor, erase lines, retitle the window or set the clipboard; CR and LF start a line),
// DEL, C1 controls (U+009B is a one-character CSI), and the format characters that reorder or
// hide text (bidi embeddings, overrides and isolates, zero-width characters, line separators).
// Past ASCII's C0 controls: DEL, the C1 controls and the format characters.
const BEYOND_C0 =
  '\\u007f-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb';
const UNPRINTABLE = new RegExp(`[\\u0000-\\u001f${BEYOND_C0}]`, 'gu');
// The same characters but the C0 controls: what a JSON line (where C0 controls are already
// escaped, and the line's own break must stay) can still carry to a terminal.
const UNPRINTABLE_IN_JSON = new RegExp(`[${BEYOND_C0}]`, 'u');
const UNPRINTABLE_IN_JSON_ALL = new RegExp(UNPRINTABLE_IN_JSON.source, 'gu');

const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * Text that agents or servers chose (a note's name, a call's arguments, a tool's description),
 * made safe to print on a person's terminal: every control or format character is shown as a
 * `\uXXXX` escape, so the text can neither forge or erase lines of vaultd's output nor send the
 * terminal a command.
 * @param text any text.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escaped);
}

/**
 * A JSON line (a log line) with every DEL, C1 control and format character inside its strings
 * written as a `\uXXXX` escape: the same JSON to a reader, nothing a terminal acts on or
 * reorders when a person reads the log (`journalctl`, `tail`).
 * @param line one JSON text; its structure is ASCII, so these characters are only in strings.
 */
export function inertJsonLine(line: string): string {
  return UNPRINTABLE_IN_JSON.test(line) ? line.replace(UNPRINTABLE_IN_JSON_ALL, escaped) : line;
}

/**
 * A value as the CLI prints it for `--json`: indented JSON with every DEL, C1 control and format
 * character in its strings written as a `\uXXXX` escape, as the log does. JSON.stringify escapes
 * only C0 controls: a note's name or a call's arguments printed raw sent U+009B (a one-byte CSI
 * on some terminals) or a bidi override to the operator's terminal (review finding F5). Parsed,
 * it is the same value.
 * @param value any JSON-serialisable value.
 */
export function printableJson(value: unknown): string {
  return inertJsonLine(JSON.stringify(value, null, 2));
}
