import type { FileRoot, Tool } from '../protocol/types.ts';
import { canonicalPath, CanonicalPathError } from '../vault/canonical-path.ts';

/** Arguments with their path parameters canonical, and how the agent spelled those that changed. */
export interface CanonicalArguments {
  readonly args: Record<string, unknown>;
  /** Each path parameter whose spelling differed from its canonical path, as spelled. */
  readonly spelled?: Readonly<Record<string, string>>;
}

/**
 * Bring a tool's path parameters (`pathParameters`) to their canonical path (see
 * {@link canonicalPath}), so that a policy rule or grant cannot be dodged or stretched by another
 * spelling of the same file (`./x`, `a/../x`, an absolute path, a link the agent made).
 * @param tool the tool.
 * @param args its validated, normalised arguments; never modified.
 * @param roots the tool's roots on their real paths; the first is the vault.
 * @returns the arguments to gate, preview and run, or a message when a path cannot be resolved.
 */
export function canonicalPaths(
  tool: Tool,
  args: Record<string, unknown>,
  roots: readonly FileRoot[],
): CanonicalArguments | string {
  const names = tool.pathParameters ?? [];
  let out: Record<string, unknown> | undefined;
  let spelled: Record<string, string> | undefined;
  for (const name of names) {
    const value = args[name];
    if (typeof value !== 'string') continue;
    let canonical: string;
    try {
      canonical = canonicalPath(roots, value);
    } catch (error) {
      if (error instanceof CanonicalPathError) return `parameter '${name}': ${error.message}`;
      throw error;
    }
    if (canonical === value) continue;
    out ??= { ...args };
    out[name] = canonical;
    spelled ??= {};
    spelled[name] = value;
  }
  if (out === undefined) return { args };
  return { args: out, ...(spelled === undefined ? {} : { spelled: Object.freeze(spelled) }) };
}
