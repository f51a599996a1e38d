import { SAFETY_LEVELS, type CallFacts, type Effects, type Tool } from './types.ts';

export type { Effects } from './types.ts';

/**
 * The effects of one call: the one place that says whether a call has side effects and how
 * dangerous it is, read by the gate, the ledger, the cache and the retry rule. A tool's effects
 * function is asked with the normalised arguments; when it fails or answers nonsense, the call
 * counts as the most dangerous the tool can be, with side effects.
 * @param tool the declared tool.
 * @param args the call's normalised arguments.
 * @param facts the tool's config and file access, for an effects function.
 */
export async function effectsOf(
  tool: Tool,
  args: Readonly<Record<string, unknown>>,
  facts?: CallFacts,
): Promise<Effects> {
  const declared = staticEffects(tool);
  if (typeof tool.effects !== 'function') return declared;
  try {
    if (facts === undefined) throw new Error('no facts to decide the effects from');
    const given = await tool.effects(args as Record<string, unknown>, facts);
    if (!isEffects(given)) throw new Error(`not effects: ${JSON.stringify(given)}`);
    return Object.freeze({ ...given });
  } catch {
    return { ...declared, safety: tool.safety, readOnly: false, idempotent: false };
  }
}

/**
 * A tool's effects without looking at a call: its declared (most dangerous) level, and whether it
 * is read-only and idempotent for every call.
 * @param tool the declared tool.
 */
export function staticEffects(tool: Tool): Effects {
  if (tool.effects !== undefined && typeof tool.effects !== 'function') return tool.effects;
  return { safety: tool.safety, readOnly: tool.readOnly, idempotent: tool.idempotent };
}

function isEffects(value: unknown): value is Effects {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    SAFETY_LEVELS.includes(v['safety'] as never) &&
    typeof v['readOnly'] === 'boolean' &&
    typeof v['idempotent'] === 'boolean'
  );
}
