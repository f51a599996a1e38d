/** The most bytes one message from an MCP server over HTTP may take: the SDK's cap over stdio. */
export const MAX_MCP_MESSAGE_BYTES = 10 * 1024 * 1024;
/** The bytes of an HTTP error answer's body kept (the SDK quotes it in its error). */
const MAX_ERROR_BYTES = 4096;

/**
 * A `fetch` for an MCP server over Streamable HTTP that cuts off any message over `maxBytes`: a
 * JSON answer as a whole, an event stream event by event (the stream itself may stay open for
 * hours). The SDK caps what a stdio server sends at 10 MiB a message, but reads an HTTP answer or
 * event to its end whatever its size: a server (or whatever it relays) could fill vaultd's memory
 * with one answer. Past the cap the body fails with an error that says so, the call fails with it,
 * and the connection is made again. Of an error answer (not 2xx) the first 4 KiB are kept: the SDK
 * reads it whole into its error message.
 * @param maxBytes the most bytes a message may take.
 * @param onEventCut called when an event stream was cut off: the SDK leaves the request that
 *   stream answered waiting (a JSON answer cut off fails its request by itself).
 */
export function cappedFetch(
  maxBytes = MAX_MCP_MESSAGE_BYTES,
  onEventCut: (error: Error) => void = () => undefined,
): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.body === null) return response;
    // The SDK reads the body of an error answer whole, into its error message: the first bytes
    // say what went wrong; the rest is dropped, and the connection with it.
    if (response.status < 200 || response.status >= 300) {
      const kept = response.status === 304 ? null : await readUpTo(response.body, MAX_ERROR_BYTES);
      return new Response(kept, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    const events = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    let size = 0;
    // An event ends at a blank line: a line feed right after another (a carriage return between
    // them is part of a CRLF line ending).
    let afterLineFeed = false;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          if (!events) {
            size += chunk.length;
          } else {
            for (let i = 0; i < chunk.length; i++) {
              const byte = chunk[i] as number;
              if (byte === 10) {
                if (afterLineFeed) size = 0;
                afterLineFeed = true;
              } else if (byte !== 13) {
                afterLineFeed = false;
                size++;
              }
            }
          }
          if (size <= maxBytes) {
            controller.enqueue(chunk);
            return;
          }
          const error = new Error(
            `the MCP server sent a message of more than ${maxBytes} bytes; it was cut off there`,
          );
          controller.error(error);
          if (events) onEventCut(error);
        },
      }),
    );
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

async function readUpTo(body: ReadableStream<Uint8Array>, max: number): Promise<Uint8Array> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value.subarray(0, max - size));
      size += Math.min(value.length, max - size);
    }
  } catch {
    // What came before the failure is kept.
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
