import { formatOutput, type FormattedOutput } from './format-result.ts';

/** Output kept of a result when a tool declares no cap of its own. */
export const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024;

/**
 * Keep a result's output within a byte cap: `content` cut at the cap (on a character boundary)
 * with a marker saying how much was dropped, and `data` dropped when its JSON is over the cap
 * (the content says so), so a tool's output can never flood a note or the ledger.
 * @param output what the handler returned, formatted.
 * @param maxBytes the cap, for the content and for the data each.
 */
export function capOutput(output: FormattedOutput, maxBytes: number): FormattedOutput {
  let content = output.content;
  const contentBytes = Buffer.byteLength(content);
  if (contentBytes > maxBytes) {
    const kept = Buffer.from(content)
      .subarray(0, maxBytes)
      .toString('utf8')
      .replace(/\uFFFD$/, '');
    content = `${kept}\n\n[output truncated: ${contentBytes - Buffer.byteLength(kept)} of ${contentBytes} bytes over the ${maxBytes}-byte cap were dropped]`;
  }
  if (output.data === undefined) return content === output.content ? output : { content };
  const dataBytes = Buffer.byteLength(JSON.stringify(output.data) ?? '');
  if (dataBytes <= maxBytes) return { content, data: output.data };
  return {
    content: `${content}\n\n[structured data dropped: ${dataBytes} bytes, over the ${maxBytes}-byte cap]`,
  };
}

/**
 * Bound a failure's message and structured data as {@link capOutput} bounds a success: a tool's
 * error (an MCP server's `isError` result) went into the note whole, 9 MB past the cap, and data
 * nested 100,000 deep overflowed the stack of everything that walks it, losing the call's result
 * (review finding). Data that is not plain JSON within the nesting limit is dropped, said so.
 * @param message the error's message.
 * @param data the error's structured data, if any.
 * @param maxBytes the tool's output cap.
 */
export function capFailure(
  message: string,
  data: unknown,
  maxBytes: number,
): { message: string; data?: unknown } {
  const capped = capOutput({ content: message }, maxBytes).content;
  if (data === undefined) return { message: capped };
  const formatted = typeof data === 'object' && data !== null ? formatOutput(data) : { data };
  if (formatted.data === undefined) {
    return {
      message: `${capped}\n\n[structured data dropped: not plain JSON, or nested too deep]`,
    };
  }
  const bounded = capOutput({ content: capped, data: formatted.data }, maxBytes);
  return bounded.data === undefined
    ? { message: bounded.content }
    : { message: bounded.content, data: bounded.data };
}
