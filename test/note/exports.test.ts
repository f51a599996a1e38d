import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as note from '../../src/note/index.ts';

test('the note stage exports exactly its public surface', () => {
  assert.deepEqual(Object.keys(note).sort(), [
    'NoteTooComplexError',
    'NoteWorker',
    'OWNED_HEADINGS',
    'RESULTS_HEADING',
    'appendResults',
    'appendedSection',
    'applyWriteBack',
    'canonicalJson',
    'deriveBlockId',
    'deriveCallId',
    'escapeMarkdownLine',
    'escapeMarkdownText',
    'escapeMarkdownTitle',
    'mightHaveToolCall',
    'parseNote',
    'quoteLines',
    'readFrontMatter',
    'renderResult',
    'replaceSection',
    'safeLinkUrl',
    'splitFrontMatter',
    'updateFrontMatter',
  ]);
});
