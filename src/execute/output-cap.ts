import type { FormattedOutput } from './format-result.ts';

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
