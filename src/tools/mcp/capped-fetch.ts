/** The most bytes one message from an MCP server over HTTP may take: the SDK's cap over stdio. */
export const MAX_MCP_MESSAGE_BYTES = 10 * 1024 * 1024;
/** The bytes of an HTTP error answer's body kept (the SDK quotes it in its error). */
const MAX_ERROR_BYTES = 4096;
/** The shortest time between the starts of two GETs (event streams) of one connection. */
export const MIN_GET_INTERVAL_MS = 1000;
/** The longest wait before a GET after event streams that carried nothing. */
export const MAX_GET_BACKOFF_MS = 60_000;
/** An event stream open this long counts as used, even if it carried no message. */
const LASTING_STREAM_MS = 10_000;
/** Event ids of requests that are over, kept to refuse resuming their streams. */
const FINISHED_IDS = 1000;
/** The longest event id (in bytes) followed; a longer one is not. */
const MAX_EVENT_ID_BYTES = 1024;

type RequestId = string | number;

/** A request of vaultd's in flight: its response stream (a POST's, or the GET resuming it). */
interface InFlight {
  /** Close the stream at once: the request is answered, cancelled or timed out. */
  end: () => void;
  /** The id of the stream's last event, which a GET resuming it names. */
  lastEventId: string | undefined;
}

/** The `fetch` of a Streamable HTTP transport, and what it must be told of the messages read. */
export interface McpHttpFetch {
  readonly fetch: typeof fetch;
  /**
   * Give it each message the transport reads (chain it before the SDK's `onmessage`): the answer
   * to a request closes that request's response stream, if the server keeps it open.
   */
  readonly received: (message: unknown) => void;
}

/**
 * The `fetch` for an MCP server over Streamable HTTP (one per transport):
 *
 * - It cuts off any message over `maxBytes`: a JSON answer as a whole, an event stream event by
 *   event (the stream itself may stay open for hours). The SDK caps what a stdio server sends at
 *   10 MiB a message, but reads an HTTP answer or event to its end whatever its size: a server (or
 *   whatever it relays) could fill vaultd's memory with one answer. Past the cap the body fails
 *   with an error that says so, the call fails with it, and the connection is made again. Of an
 *   error answer (not 2xx) the first 4 KiB are kept: the SDK reads it whole into its error message.
 * - It paces GETs (the server's event stream, or one resuming a request's): at most one a second,
 *   and after a stream that ended carrying no message (nor staying open 10 s) a wait doubling from
 *   2 s to a minute. The SDK reconnects after a stream ends cleanly with its attempts counted from 0
 *   again, after the server's `retry:` with no minimum: a server answering the GET with `retry: 0`
 *   and a priming event was asked again at once, about 300 times a second, for ever (review
 *   finding 3); one closing it at once, every second for ever.
 * - It gives each request's POST an abort signal of its own, linked to the transport's: the SDK
 *   ties every fetch only to the transport's, so a call that timed out or was cancelled
 *   (`notifications/cancelled`, which goes out through here, names it) left its response stream
 *   and socket open until the transport closed, one more each time (review finding 2). The stream
 *   is closed when the request is cancelled or answered; a GET resuming it is then refused (405:
 *   the SDK does not ask again).
 *
 * @param maxBytes the most bytes a message may take.
 * @param onEventCut called when an event stream was cut off: the SDK leaves the request that
 *   stream answered waiting (a JSON answer cut off fails its request by itself).
 */
export function cappedFetch(
  maxBytes = MAX_MCP_MESSAGE_BYTES,
  onEventCut: (error: Error) => void = () => undefined,
): McpHttpFetch {
  /** The controller of every fetch whose response is not read to its end yet. */
  const live = new Set<AbortController>();
  const watched = new WeakSet<AbortSignal>();
  const inFlight = new Map<RequestId, InFlight>();
  const finished = new Set<string>();
  let nextGetAt = 0;
  let emptyStreams = 0;

  /** The transport's signal aborts every fetch (one listener, not one per fetch). */
  function watch(signal: AbortSignal): void {
    if (watched.has(signal)) return;
    watched.add(signal);
    signal.addEventListener(
      'abort',
      () => {
        for (const controller of live) controller.abort(signal.reason);
        live.clear();
        inFlight.clear();
      },
      { once: true },
    );
  }

  /** A request answered, cancelled or timed out: its stream is closed, never resumed. */
  function finish(id: RequestId): void {
    const request = inFlight.get(id);
    if (request === undefined) return;
    inFlight.delete(id);
    if (request.lastEventId !== undefined) {
      finished.add(request.lastEventId);
      if (finished.size > FINISHED_IDS) finished.delete(finished.values().next().value as string);
    }
    request.end();
  }

  /** Wait for this GET's turn. */
  async function pace(signal: AbortSignal): Promise<void> {
    const now = performance.now();
    const at = Math.max(now, nextGetAt);
    nextGetAt = at + MIN_GET_INTERVAL_MS;
    if (at > now) await sleep(at - now, signal);
  }

  /** A GET's stream ended: one that carried nothing puts the next off longer each time. */
  function getEnded(carried: boolean, startedAt: number): void {
    const now = performance.now();
    if (carried || now - startedAt >= LASTING_STREAM_MS) {
      emptyStreams = 0;
      return;
    }
    emptyStreams = Math.min(emptyStreams + 1, 32);
    const wait = Math.min(MAX_GET_BACKOFF_MS, MIN_GET_INTERVAL_MS * 2 ** emptyStreams);
    nextGetAt = Math.max(nextGetAt, now + wait);
  }

  const cappedFetch: typeof fetch = async (input, init) => {
    const outer = init?.signal ?? undefined;
    if (outer !== undefined) {
      if (outer.aborted) return fetch(input, init);
      watch(outer);
    }
    const method = (init?.method ?? 'GET').toUpperCase();
    const get = method === 'GET';
    const controller = new AbortController();
    let request: InFlight | undefined;
    if (method === 'POST') {
      const { requests, cancelled } = jsonRpcIds(init?.body);
      for (const id of cancelled) finish(id);
      if (requests.length > 0) {
        request = { end: () => controller.abort(), lastEventId: undefined };
        for (const id of requests) inFlight.set(id, request);
      }
    } else if (get) {
      const resumed = new Headers(init?.headers).get('last-event-id');
      if (resumed !== null) {
        // Resuming the stream of a request that is over: refused, as a server without event
        // streams refuses the GET (the SDK then does not ask again).
        if (finished.has(resumed)) return new Response(null, { status: 405 });
        for (const each of inFlight.values()) if (each.lastEventId === resumed) request = each;
        if (request !== undefined) request.end = () => controller.abort();
      }
    }
    live.add(controller);
    const startedAt = performance.now();
    let response: Response;
    try {
      if (get) await pace(controller.signal);
      response = await fetch(input, { ...init, signal: controller.signal });
    } catch (error) {
      live.delete(controller);
      if (get) getEnded(false, startedAt);
      throw error;
    }
    if (response.body === null) {
      live.delete(controller);
      if (get) getEnded(false, startedAt);
      return response;
    }
    // The SDK reads the body of an error answer whole, into its error message: the first bytes
    // say what went wrong; the rest is dropped, and the connection with it.
    if (response.status < 200 || response.status >= 300) {
      const kept = response.status === 304 ? null : await readUpTo(response.body, MAX_ERROR_BYTES);
      live.delete(controller);
      if (get) getEnded(false, startedAt);
      return new Response(kept, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    const events = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    const scan = new EventScan(events);
    const reader = response.body.getReader();
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      live.delete(controller);
      if (get) getEnded(scan.carried, startedAt);
    };
    let closed = false;
    let out: ReadableStreamDefaultController<Uint8Array> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(streamController) {
        out = streamController;
      },
      async pull(streamController) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          if (!closed) streamController.error(error);
          closed = true;
          end();
          return;
        }
        if (closed) return;
        if (next.done) {
          closed = true;
          streamController.close();
          end();
          return;
        }
        if (!scan.push(next.value, maxBytes)) {
          const error = new Error(
            `the MCP server sent a message of more than ${maxBytes} bytes; it was cut off there`,
          );
          closed = true;
          streamController.error(error);
          void reader.cancel(error).catch(() => undefined);
          end();
          if (events) onEventCut(error);
          return;
        }
        if (request !== undefined && scan.lastEventId !== undefined)
          request.lastEventId = scan.lastEventId;
        streamController.enqueue(next.value);
      },
      cancel(reason) {
        closed = true;
        end();
        return reader.cancel(reason).catch(() => undefined);
      },
    });
    if (request !== undefined) {
      // The request is over: the SDK reads the end of the stream (not an error), the socket goes.
      request.end = () => {
        if (!closed) out?.close();
        closed = true;
        controller.abort();
        end();
      };
    }
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };

  return {
    fetch: cappedFetch,
    received(message) {
      if (typeof message !== 'object' || message === null || 'method' in message) return;
      const id = (message as { id?: unknown }).id;
      if (typeof id === 'string' || typeof id === 'number') finish(id);
    },
  };
}

/** The ids of the requests a POST's body carries, and of those it cancels. */
function jsonRpcIds(body: unknown): { requests: RequestId[]; cancelled: RequestId[] } {
  const requests: RequestId[] = [];
  const cancelled: RequestId[] = [];
  if (typeof body !== 'string') return { requests, cancelled };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { requests, cancelled };
  }
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (typeof message !== 'object' || message === null) continue;
    const { id, method, params } = message as { id?: unknown; method?: unknown; params?: unknown };
    if (typeof method !== 'string') continue;
    if (typeof id === 'string' || typeof id === 'number') requests.push(id);
    if (method === 'notifications/cancelled' && typeof params === 'object' && params !== null) {
      const { requestId } = params as { requestId?: unknown };
      if (typeof requestId === 'string' || typeof requestId === 'number') cancelled.push(requestId);
    }
  }
  return { requests, cancelled };
}

/**
 * Follows a response body as it is read: its size (a JSON answer's whole, an event stream's event
 * by event) and, of an event stream, whether an event carried a message and the last event id.
 */
class EventScan {
  readonly #events: boolean;
  #size = 0;
  /** An event ends at a blank line: a line feed right after another (a CR is ignored). */
  #afterLineFeed = false;
  /** The start of the line being read, enough to tell its field and an id's value. */
  readonly #line = new Uint8Array(MAX_EVENT_ID_BYTES + 8);
  #lineLength = 0;
  #dataLines = 0;
  #dataBytes = 0;
  #eventId: string | undefined;
  /** Whether an event with data (a message) was read. */
  carried = false;
  /** The id of the last event dispatched with one (as the SDK's parser keeps it). */
  lastEventId: string | undefined;

  constructor(events: boolean) {
    this.#events = events;
  }

  /** Take a chunk; false when a message went over `maxBytes`. */
  push(chunk: Uint8Array, maxBytes: number): boolean {
    if (!this.#events) {
      this.#size += chunk.length;
      return this.#size <= maxBytes;
    }
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (byte === 10) {
        if (this.#afterLineFeed) {
          this.#size = 0;
          this.#endEvent();
        } else {
          this.#endLine();
        }
        this.#afterLineFeed = true;
        this.#lineLength = 0;
      } else if (byte !== 13) {
        this.#afterLineFeed = false;
        this.#size++;
        if (this.#lineLength < this.#line.length) this.#line[this.#lineLength] = byte;
        this.#lineLength++;
      }
    }
    return this.#size <= maxBytes;
  }

  #endLine(): void {
    const line = this.#line;
    const length = this.#lineLength;
    // "data" or "data:…" (one space after the colon is not part of the value).
    if (startsWith(line, length, DATA)) {
      const valueAt = line[4] === 58 && line[5] === 32 ? 6 : 5;
      if (length === 4 || line[4] === 58) {
        this.#dataLines++;
        this.#dataBytes += Math.max(0, length - valueAt);
      }
    } else if (length === 2 && startsWith(line, length, ID)) {
      this.#eventId = '';
    } else if (startsWith(line, length, ID) && line[2] === 58 && length <= line.length) {
      const valueAt = length > 3 && line[3] === 32 ? 4 : 3;
      const value = new TextDecoder().decode(line.subarray(valueAt, length));
      if (!value.includes('\0')) this.#eventId = value;
    }
  }

  #endEvent(): void {
    if (this.#dataLines > 0) {
      if (this.#dataBytes > 0 || this.#dataLines > 1) this.carried = true;
      if (this.#eventId !== undefined && this.#eventId !== '') this.lastEventId = this.#eventId;
    }
    this.#dataLines = 0;
    this.#dataBytes = 0;
    this.#eventId = undefined;
  }
}

const DATA = new TextEncoder().encode('data');
const ID = new TextEncoder().encode('id');

function startsWith(line: Uint8Array, length: number, prefix: Uint8Array): boolean {
  if (length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (line[i] !== prefix[i]) return false;
  return true;
}

/** Resolves after `ms`, or rejects when `signal` aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref();
    signal.addEventListener('abort', onAbort, { once: true });
  });
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
