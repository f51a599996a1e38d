import { stringify } from 'yaml';
import { MAX_NESTING, nestsDeeperThan } from '../protocol/depth.ts';
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
 * functions are dropped); a {@link toolOutput} keeps its own content and data.
 * @param value the handler's return value.
 */
export function formatOutput(value: unknown): FormattedOutput {
  if (typeof value === 'string') return { content: value };
  if (isToolOutput(value)) {
    const data =
      typeof value.data === 'object' && value.data !== null
        ? formatOutput(value.data).data
        : value.data;
    return data === undefined ? { content: value.content } : { content: value.content, data };
  }
  if (value === undefined || value === null) return { content: EMPTY_OUTPUT };
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return { content: String(value) };
  }
  if (typeof value !== 'object') return { content: EMPTY_OUTPUT };
  if (value instanceof Uint8Array) return { content: `(binary output, ${value.byteLength} bytes)` };

  let data: unknown;
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
    data = JSON.parse(json) as unknown;
  } catch (error) {
    // Circular structures and BigInt cannot be JSON; say so instead of failing the call. A value
    // nested past what JSON's recursion holds (a stack overflow) is too deep to show at all.
    if (error instanceof RangeError && /call stack/i.test(error.message))
      return { content: `(output nested more than ${MAX_NESTING} levels deep, too deep to show)` };
    const reason = error instanceof Error ? error.message : String(error);
    return { content: `(output that cannot be shown as JSON: ${reason})` };
  }
  if (data === undefined || data === null) return { content: EMPTY_OUTPUT };
  if (typeof data !== 'object') return { content: String(data), data };
  // Everything after this (secret redaction, the note's JSON block, the copy to the note worker)
  // walks the data recursively: data nested thousands deep (a hostile MCP server's
  // structuredContent) overflowed the stack there. Past MAX_NESTING it is kept as text only.
  if (nestsDeeperThan(data, MAX_NESTING)) return { content: json };
  // YAML is for reading; a value this large is cut to the output cap anyway, and the library
  // took seconds over it (200,000 keys: 2.4 s of the main thread), so it is shown as JSON.
  if (json.length > YAML_MAX_JSON) return { content: JSON.stringify(data, null, 2), data };
  return { content: renderData(data), data };
}

/** Values whose JSON is longer than this are shown as JSON, not YAML (about 25 ms of YAML). */
const YAML_MAX_JSON = 64 * 1024;

function renderData(data: object): string {
  if (Array.isArray(data) && data.length === 0) return '(empty list)';
  if (!Array.isArray(data) && Object.keys(data).length === 0) return '(empty object)';
  return stringify(data, { lineWidth: 0, indent: 2 }).trimEnd();
}
