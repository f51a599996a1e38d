import { ToolError } from '../../protocol/errors.ts';

/** One replacement of `edit_file`. */
export interface Edit {
  readonly old_text: string;
  readonly new_text: string;
}

/**
 * Apply exact replacements in order, each to the text the ones before it left; each `old_text`
 * must occur exactly once. In a file with CRLF line ends, an `old_text` written with LF matches
 * the CRLF text (and its `new_text` gets CRLF too).
 * @param text the file's text.
 * @param edits the replacements.
 * @returns the new text.
 * @throws ToolError `EXECUTION_FAILED` naming the first edit that matched 0 or 2+ times.
 */
export function applyEdits(text: string, edits: readonly Edit[]): string {
  const crlf = text.includes('\r\n');
  let out = text;
  edits.forEach((edit, i) => {
    let oldText = edit.old_text;
    let newText = edit.new_text;
    if (crlf && !oldText.includes('\r\n') && oldText.includes('\n') && count(out, oldText) === 0) {
      oldText = oldText.replace(/\n/g, '\r\n');
      newText = newText.replace(/\r?\n/g, '\r\n');
    }
    const n = count(out, oldText);
    const which = `edit ${i + 1} (old_text ${JSON.stringify(edit.old_text.length > 60 ? `${edit.old_text.slice(0, 57)}...` : edit.old_text)})`;
    if (n === 0) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${which} matches nothing${i > 0 ? ' after the edits before it' : ''}; read the file again and copy old_text exactly (spaces and line ends count). Nothing was changed.`,
      );
    }
    if (n > 1) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${which} matches ${n} times; add lines around it so that it matches once. Nothing was changed.`,
      );
    }
    const at = out.indexOf(oldText);
    out = out.slice(0, at) + newText + out.slice(at + oldText.length);
  });
  return out;
}

/** Occurrences of `needle` in `text`, overlapping ones included (so `aa` in `aaa` is ambiguous). */
function count(text: string, needle: string): number {
  let n = 0;
  let from = 0;
  for (;;) {
    const at = text.indexOf(needle, from);
    if (at < 0) return n;
    n++;
    from = at + 1;
  }
}
