const BRAND = Symbol.for('vaultd.tool-output');

/** What a handler returns to choose both its result's `content` and its `data`. */
export interface ToolOutput {
  /** What the model and the human read (plain text; the note escapes it). */
  readonly content: string;
  /** The structured result behind it (JSON-safe values). */
  readonly data: unknown;
}

/**
 * Wrap a handler's return value so that the result's `content` is this text and its `data` this
 * value (a plain object or array would otherwise be shown as YAML).
 * @param content the readable text.
 * @param data the structured data.
 */
export function toolOutput(content: string, data: unknown): ToolOutput {
  return Object.freeze({ [BRAND]: true, content, data });
}

/**
 * Whether a value was made by {@link toolOutput}.
 * @param value a handler's return value.
 */
export function isToolOutput(value: unknown): value is ToolOutput {
  return typeof value === 'object' && value !== null && BRAND in value;
}
