import { hash as digest } from 'node:crypto';
import { canonicalJson } from '../protocol/canonical-json.ts';

export { canonicalJson };

/** What an explicit `tool_call.id` may look like. */
export const EXPLICIT_ID = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * Derives the stable id of a call written without `tool_call.id`: `call_` and the first 12 hex
 * digits of the SHA-256 of the canonical JSON of `{name, arguments}` followed by `#occurrence`.
 * @param name The tool name.
 * @param args The call's arguments.
 * @param occurrence How many identical calls (same name and arguments) come earlier in the note; 0 for the first.
 */
export function deriveCallId(
  name: string,
  args: Record<string, unknown>,
  occurrence: number,
): string {
  return callIdOfCanonical(canonicalCall(name, args), occurrence);
}

/**
 * `canonicalJson({ name, arguments: args })`: the text a derived id hashes.
 * @param name the tool name.
 * @param args the call's arguments.
 */
export function canonicalCall(name: string, args: unknown): string {
  // `arguments` sorts before `name`: the object below is in canonical order whenever `args` is,
  // and canonicalJson then writes it with one JSON.stringify.
  return canonicalJson({ arguments: args, name });
}

/**
 * {@link deriveCallId} from the canonical JSON of `{name, arguments}` already at hand.
 * @param canonical `canonicalJson({ name, arguments })`.
 * @param occurrence as for deriveCallId.
 */
export function callIdOfCanonical(canonical: string, occurrence: number): string {
  return `call_${hash(`${canonical}#${occurrence}`)}`;
}

/**
 * Derives the stable id of an invalid block: `block_` and 12 hex digits of the SHA-256 of the
 * block's text followed by `#occurrence`.
 * @param raw The block's text (its code, without fences).
 * @param occurrence How many identical invalid blocks come earlier in the note; 0 for the first.
 */
export function deriveBlockId(raw: string, occurrence: number): string {
  return `block_${hash(`${raw}#${occurrence}`)}`;
}

function hash(text: string): string {
  return digest('sha256', text, 'hex').slice(0, 12);
}
