import { updateFrontMatter } from './front-matter.ts';
import { appendResults, replaceSection } from './splice.ts';
import type { ToolResult } from '../protocol/types.ts';

/** A write-back computed in one go: results appended, one owned section set, front-matter keys. */
export interface WriteBackEdit {
  readonly results: readonly ToolResult[];
  /** The note's call ids in block order, so results read in block order whenever they came. */
  readonly order?: readonly string[];
  /** Heading and body of a vaultd section to set (body null removes it). */
  readonly section?: {
    readonly heading: string;
    readonly body: string | null;
    /** Texts one of which vaultd's own section holds (see `replaceSection`). */
    readonly markers?: readonly string[];
  };
  readonly frontMatter: Record<string, unknown>;
}

/** A job for the note worker. */
export type NoteJob =
  | { readonly op: 'parse'; readonly text: string }
  | { readonly op: 'edit'; readonly text: string; readonly edit: WriteBackEdit }
  | { readonly op: 'approval'; readonly text: string; readonly maxCalls: number };

/**
 * Apply a write-back to a note's text: results, then the section, then the front-matter keys.
 * @param text the note as it is on disk now.
 * @param edit what to write.
 */
export function applyWriteBack(text: string, edit: WriteBackEdit): string {
  let out = edit.results.length > 0 ? appendResults(text, edit.results, edit.order) : text;
  if (edit.section !== undefined)
    out = replaceSection(out, edit.section.heading, edit.section.body, edit.section.markers);
  return updateFrontMatter(out, edit.frontMatter);
}
