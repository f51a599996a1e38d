// Characters a terminal acts on instead of showing: C0 controls (ESC starts the sequences that
// move the cursor, erase lines, retitle the window or set the clipboard; CR and LF start a line),
// DEL, C1 controls (U+009B is a one-character CSI), and the format characters that reorder or
// hide text (bidi embeddings, overrides and isolates, zero-width characters, line separators).
const UNPRINTABLE =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/gu;

/**
 * Text that agents or servers chose (a note's name, a call's arguments, a tool's description),
 * made safe to print on a person's terminal: every control or format character is shown as a
 * `\uXXXX` escape, so the text can neither forge or erase lines of vaultd's output nor send the
 * terminal a command.
 * @param text any text.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
