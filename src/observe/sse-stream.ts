import type { ServerResponse } from 'node:http';
import type { AnyBusEvent } from './event-bus.ts';

/** Limits of one Server-Sent Events client. */
export interface SseLimits {
  /** Bytes a client may leave unread in our buffer before it is dropped. */
  readonly maxBufferedBytes: number;
}

/**
 * Format one bus event as a Server-Sent Events message: `event`, `id` and one `data` line with
 * the whole event as JSON (JSON.stringify never emits a raw newline, so one line is enough).
 * @param event the bus event.
 */
export function formatSseEvent(event: AnyBusEvent): string {
  return `event: ${event.name}\nid: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Format a control message that is not a bus event (no `id`, so it does not move the client's
 * `Last-Event-ID`).
 * @param name the SSE event name.
 * @param data JSON-serialisable data.
 */
export function formatSseControl(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Parse a `Last-Event-ID` header value into a sequence number.
 * @param header the raw header; absent, empty or not a non-negative integer gives undefined.
 */
export function parseLastEventId(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\d{1,15}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

/** One connected SSE client: writes with a bound on what it may leave unread. */
export class SseClient {
  readonly #res: ServerResponse;
  readonly #limits: SseLimits;
  #closed = false;
  #dropped = false;

  /**
   * @param res the response, headers not yet sent.
   * @param limits buffering bound.
   */
  constructor(res: ServerResponse, limits: SseLimits) {
    this.#res = res;
    this.#limits = limits;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.on('close', () => {
      this.#closed = true;
    });
  }

  /** Whether the stream ended (client gone, dropped or closed by us). */
  get closed(): boolean {
    return this.#closed || this.#res.destroyed;
  }

  /** Whether the client was dropped for not reading. */
  get dropped(): boolean {
    return this.#dropped;
  }

  /**
   * Write a chunk, or drop the client when it has stopped reading.
   * @param chunk SSE text.
   * @returns false when the client is gone or was dropped.
   */
  write(chunk: string): boolean {
    if (this.closed) return false;
    if (this.#res.writableLength > this.#limits.maxBufferedBytes) {
      this.#closed = true;
      this.#dropped = true;
      this.#res.destroy();
      return false;
    }
    this.#res.write(chunk);
    return true;
  }

  /** End the stream politely. */
  end(): void {
    if (this.closed) return;
    this.#closed = true;
    this.#res.end();
  }
}
