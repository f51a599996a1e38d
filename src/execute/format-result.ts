import { stringify } from 'yaml';
import { isToolOutput } from '../protocol/output.ts';

/** Text a result shows when the tool returned nothing. */
export const EMPTY_OUTPUT = '(no output: the tool returned nothing)';

/** What the model reads (`content`) and the structured data behind it (`data`). */
export interface FormattedOutput {
  readonly content: string;
  readonly data?: unknown;
}

/**
 * Turn what a handler returned into a result's `content` and `data`: a string passes through,
 * `undefined`/`null` become {@link EMPTY_OUTPUT}, other scalars their text, and objects and arrays
 * readable YAML text plus `data` (a JSON-safe copy: dates become ISO strings, `undefined` and
 * functions are dropped); a value made by `toolOutput` keeps its own text as `content` beside its `data`.
 * @param value the handler's return value.
 */
export function formatOutput(value: unknown): FormattedOutput {
  if (isToolOutput(value)) {
    const data = formatOutput(value.data).data;
    return data === undefined ? { content: value.content } : { content: value.content, data };
  }
  if (typeof value === 'string') return { content: value };
  if (value === undefined || value === null) return { content: EMPTY_OUTPUT };
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return { content: String(value) };
  }
  if (typeof value !== 'object') return { content: EMPTY_OUTPUT };
  if (value instanceof Uint8Array) return { content: `(binary output, ${value.byteLength} bytes)` };

  let data: unknown;
  try {
    data = JSON.parse(JSON.stringify(value)) as unknown;
  } catch (error) {
    // Circular structures and BigInt cannot be JSON; say so instead of failing the call.
    const reason = error instanceof Error ? error.message : String(error);
    return { content: `(output that cannot be shown as JSON: ${reason})` };
  }
  if (data === undefined || data === null) return { content: EMPTY_OUTPUT };
  if (typeof data !== 'object') return { content: String(data), data };
  return { content: renderData(data), data };
}

function renderData(data: object): string {
  if (Array.isArray(data) && data.length === 0) return '(empty list)';
  if (!Array.isArray(data) && Object.keys(data).length === 0) return '(empty object)';
  return stringify(data, { lineWidth: 0, indent: 2 }).trimEnd();
}
