import { canonicalJson } from '../protocol/canonical-json.ts';

export { canonicalJson };

/**
 * True when the human's edited arguments differ from the original ones (compared as canonical
 * JSON, so key order and whitespace do not count).
 * @param original the arguments the agent wrote.
 * @param edited the arguments read back from the note.
 */
export function isModified(
  original: Readonly<Record<string, unknown>>,
  edited: Readonly<Record<string, unknown>>,
): boolean {
  return canonicalJson(original) !== canonicalJson(edited);
}
