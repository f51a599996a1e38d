// The public surface of the note stage: parse a note, render and splice results, update front-matter.
export { deriveBlockId, deriveCallId, canonicalJson } from './call-id.ts';
export {
  escapeMarkdownLine,
  escapeMarkdownText,
  escapeMarkdownTitle,
  quoteLines,
  safeLinkUrl,
} from './escape.ts';
export { mightHaveToolCall, parseNote } from './find-calls.ts';
export { readFrontMatter, splitFrontMatter, updateFrontMatter } from './front-matter.ts';
export type { FrontMatterData } from './front-matter.ts';
export { OWNED_HEADINGS } from './markdown.ts';
export { renderResult } from './render-result.ts';
export { RESULTS_HEADING, appendResults, appendedSection, replaceSection } from './splice.ts';
export type {
  Diagnostic,
  FoundCall,
  FoundResult,
  FrontMatterSpan,
  InvalidBlock,
  ParsedNote,
  Place,
} from './types.ts';
export { NoteTooComplexError, NoteWorker, type NoteWorkerOptions } from './off-thread.ts';
export { applyWriteBack, type WriteBackEdit } from './worker-ops.ts';
export type { EditedText } from './transfer.ts';
