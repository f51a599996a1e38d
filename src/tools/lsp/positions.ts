import { ToolError } from '../../protocol/errors.ts';

/** A position as the Language Server Protocol counts: 0-based line, 0-based UTF-16 offset. */
export interface LspPosition {
  readonly line: number;
  readonly character: number;
}

/** A position as people count: 1-based line, 1-based column in characters (code points). */
export interface HumanPosition {
  readonly line: number;
  readonly column: number;
}

/**
 * Split a document into lines the way LSP does (`\n`, `\r\n` and `\r` end a line).
 * @param text the document.
 */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/**
 * Convert a person's 1-based line and column (a column counts characters, so an emoji or an
 * accented letter is one) to LSP's 0-based line and UTF-16 offset.
 * @param lines the document's lines.
 * @param position 1-based line and column; the column may be one past the line's last character.
 * @throws ToolError `INVALID_PARAMS` for a line or column outside the document.
 */
export function toLspPosition(lines: readonly string[], position: HumanPosition): LspPosition {
  const text = lines[position.line - 1];
  if (text === undefined || position.line < 1) {
    throw new ToolError(
      'INVALID_PARAMS',
      `line ${position.line} is outside the file, which has ${lines.length} line${lines.length === 1 ? '' : 's'}`,
    );
  }
  let character = 0;
  let column = 1;
  for (const char of text) {
    if (column === position.column) break;
    character += char.length;
    column += 1;
  }
  if (column !== position.column || position.column < 1) {
    throw new ToolError(
      'INVALID_PARAMS',
      `column ${position.column} is outside line ${position.line}, which has ${column - 1} character${column === 2 ? '' : 's'}`,
    );
  }
  return { line: position.line - 1, character };
}

/**
 * Convert an LSP position to a person's 1-based line and column in characters. An offset inside
 * a surrogate pair or past the line's end is clamped; a line past the end keeps its number.
 * @param lines the document's lines.
 * @param position LSP's 0-based line and UTF-16 offset.
 */
export function toHumanPosition(lines: readonly string[], position: LspPosition): HumanPosition {
  const text = lines[position.line];
  if (text === undefined) return { line: position.line + 1, column: position.character + 1 };
  let offset = 0;
  let column = 1;
  for (const char of text) {
    if (offset + char.length > position.character) break;
    offset += char.length;
    column += 1;
  }
  return { line: position.line + 1, column };
}
