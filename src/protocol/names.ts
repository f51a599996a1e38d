/** What a tool name must look like: snake_case starting with a letter (SPEC section 2). */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_]*$/;

/**
 * Whether `name` is a valid tool name.
 * @param name any value.
 */
export function isToolName(name: unknown): name is string {
  return typeof name === 'string' && TOOL_NAME_PATTERN.test(name);
}

/**
 * Whether a value is a plain object (not null, not an array): the one check every reader of JSON
 * uses before looking at keys.
 * @param value any value.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
