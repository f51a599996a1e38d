/** Marks a value made by {@link toolOutput}; `Symbol.for` so a plugin's own copy of vaultd agrees. */
const TOOL_OUTPUT = Symbol.for('vaultd.toolOutput');

/** What a handler returns when the text a person reads and the data an agent parses differ. */
export interface ToolOutput {
  /** The result's `content`: readable text. */
  readonly content: string;
  /** The result's `data`: structured, JSON-safe. */
  readonly data: unknown;
}

/**
 * A handler's output with its own readable `content` and structured `data` (a plain object
 * returned by a handler gets YAML of itself as content instead).
 * @param content the text of the result.
 * @param data the structured data of the result.
 */
export function toolOutput(content: string, data: unknown): ToolOutput {
  return Object.freeze({ [TOOL_OUTPUT]: true, content, data });
}

/**
 * Whether a handler's return value was made by {@link toolOutput}.
 * @param value what the handler returned.
 */
export function isToolOutput(value: unknown): value is ToolOutput {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[TOOL_OUTPUT] === true &&
    typeof (value as { content?: unknown }).content === 'string'
  );
}
