import { ToolError } from '../../protocol/errors.ts';

/**
 * Read a response body as text, at most `maxBytes`: a longer answer (by its Content-Length, or
 * once that many bytes arrived) is cancelled and refused, never read whole into memory or a note.
 * @param response the fetch response.
 * @param maxBytes the cap.
 * @param who the peer as a person reads it, for the message (`SearXNG at http://…`).
 * @throws ToolError EXECUTION_FAILED (not recoverable) past the cap.
 */
export async function readCapped(
  response: Response,
  maxBytes: number,
  who: string,
): Promise<string> {
  const tooLarge = (): ToolError =>
    new ToolError(
      'EXECUTION_FAILED',
      `${who} answered with more than ${maxBytes} bytes; the answer was cut off and not used (raise the tool's max_response_bytes if this is expected)`,
      { recoverable: false },
    );
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
