import type { Readable, Writable } from 'node:stream';

/** Bytes a header section may take before the stream is judged broken. */
const MAX_HEADER_BYTES = 8 * 1024;

/**
 * Bytes sent to the peer and not yet read by it past which nothing more is sent and the
 * connection closes: a server that stopped reading its input while it sent requests made vaultd
 * keep every answer in memory, about 150 MB a second (as the MCP stdio transport's cap).
 */
export const MAX_UNREAD_BYTES = 16 * 1024 * 1024;

/** An error answer of the peer (`error` of a JSON-RPC response). */
export class JsonRpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  /**
   * @param code the JSON-RPC error code.
   * @param message the peer's message.
   * @param data the peer's `data`, when it sent one.
   */
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'JsonRpcError';
    this.code = code;
    this.data = data;
  }
}

/** Options of {@link JsonRpcConnection}. */
export interface JsonRpcOptions {
  /** Largest message body accepted from the peer; a larger one closes the connection. */
  readonly maxMessageBytes: number;
  /** Bytes the peer may leave unread before the connection closes; {@link MAX_UNREAD_BYTES}. */
  readonly maxUnreadBytes?: number;
  /** A notification from the peer. */
  readonly onNotification: (method: string, params: unknown) => void;
  /** A request from the peer; the value (or rejection) is its answer. */
  readonly onRequest: (method: string, params: unknown) => unknown;
  /** The connection broke (bad framing, bad JSON, an oversized message, the stream ended). */
  readonly onClose: (reason: Error) => void;
}

/** What one request may be given. */
export interface RequestOptions {
  readonly timeoutMs: number;
  /** Aborting it rejects the request and sends `$/cancelRequest`. */
  readonly signal?: AbortSignal;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly method: string;
}

/**
 * JSON-RPC 2.0 over a byte stream framed with `Content-Length` headers, as the Language Server
 * Protocol speaks it: requests with a timeout and cancellation, notifications both ways, and
 * requests from the peer answered by a handler. Every message is bounded in size; a peer that
 * breaks the framing, or leaves more than the unread cap of what it was sent unread, closes the
 * connection and every pending request fails with the reason.
 */
export class JsonRpcConnection {
  readonly #output: Writable;
  readonly #options: JsonRpcOptions;
  readonly #pending = new Map<number, Pending>();
  readonly #drainWaiters = new Set<() => void>();
  #nextId = 1;
  #buffer: Buffer = Buffer.alloc(0);
  #bodyLength: number | undefined;
  #closed: Error | undefined;

  /**
   * @param input the peer's output (its stdout).
   * @param output the peer's input (its stdin).
   * @param options message cap and handlers.
   */
  constructor(input: Readable, output: Writable, options: JsonRpcOptions) {
    this.#output = output;
    this.#options = options;
    input.on('data', (chunk: Buffer) => this.#receive(chunk));
    input.on('end', () => this.close(new Error('the server closed its output')));
    input.on('error', (error) => this.close(error));
    output.on('error', (error) => this.close(error));
    output.on('drain', () => this.#wakeDrainWaiters());
  }

  /** Why the connection is closed, or undefined while it is open. */
  get closed(): Error | undefined {
    return this.#closed;
  }

  /**
   * Send a request and wait for its answer.
   * @param method the method.
   * @param params its parameters.
   * @param options timeout and signal.
   * @throws JsonRpcError for an error answer; Error on timeout, abort or a closed connection.
   */
  request<T>(method: string, params: unknown, options: RequestOptions): Promise<T> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    if (options.signal?.aborted === true) return Promise.reject(new Error('the call was aborted'));
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.#pending.delete(id);
      };
      const giveUp = (error: Error): void => {
        done();
        if (this.#closed === undefined) this.notify('$/cancelRequest', { id });
        reject(error);
      };
      const timer = setTimeout(
        () => giveUp(new Error(`no answer to ${method} within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      const onAbort = (): void => giveUp(new Error('the call was aborted'));
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        method,
        resolve: (value) => {
          done();
          resolve(value as T);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      this.#write({ jsonrpc: '2.0', id, method, params });
    });
  }

  /**
   * Send a notification (no answer).
   * @param method the method.
   * @param params its parameters.
   */
  notify(method: string, params: unknown): void {
    if (this.#closed !== undefined) return;
    this.#write({ jsonrpc: '2.0', method, params });
  }

  /**
   * Wait until the peer has taken what was sent (its input's buffer has room again), so that a
   * sender of large messages (documents of megabytes) does not pile them up unread. Resolves at
   * once when nothing waits to be read or the connection is closed.
   * @param signal aborting it rejects the wait.
   */
  drained(signal?: AbortSignal): Promise<void> {
    if (this.#closed !== undefined || !this.#output.writableNeedDrain) return Promise.resolve();
    if (signal?.aborted === true) return Promise.reject(new Error('the call was aborted'));
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.#drainWaiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.#drainWaiters.delete(done);
        reject(new Error('the call was aborted'));
      };
      this.#drainWaiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Close: every pending request fails with the reason; later requests fail at once.
   * @param reason why.
   */
  close(reason: Error): void {
    if (this.#closed !== undefined) return;
    this.#closed = reason;
    for (const pending of [...this.#pending.values()]) pending.reject(reason);
    this.#pending.clear();
    this.#buffer = Buffer.alloc(0);
    this.#wakeDrainWaiters();
    this.#options.onClose(reason);
  }

  #wakeDrainWaiters(): void {
    for (const wake of [...this.#drainWaiters]) wake();
  }

  #write(message: object): void {
    if (this.#closed !== undefined) return;
    const unread = this.#output.writableLength;
    const cap = this.#options.maxUnreadBytes ?? MAX_UNREAD_BYTES;
    if (unread > cap) {
      // Nothing more is sent: what it has not read is dropped with the stream, and the
      // connection's owner ends the server.
      this.close(
        new Error(
          `the server has not read the last ${mebibytes(unread)} MiB sent to it (over the ${mebibytes(cap)} MiB cap): it stopped reading its input`,
        ),
      );
      this.#output.destroy();
      return;
    }
    const body = Buffer.from(JSON.stringify(message), 'utf8');
    try {
      this.#output.write(`Content-Length: ${body.length}\r\n\r\n`);
      this.#output.write(body);
    } catch (error) {
      this.close(error as Error);
    }
  }

  #receive(chunk: Buffer): void {
    if (this.#closed !== undefined) return;
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      if (this.#bodyLength === undefined) {
        const end = this.#buffer.indexOf('\r\n\r\n');
        if (end === -1) {
          if (this.#buffer.length > MAX_HEADER_BYTES) {
            this.close(new Error('the server sent a header section without an end'));
          }
          return;
        }
        const length = parseHeaders(this.#buffer.subarray(0, end).toString('ascii'));
        if (typeof length === 'string') {
          this.close(new Error(length));
          return;
        }
        if (length > this.#options.maxMessageBytes) {
          this.close(
            new Error(
              `the server sent a message of ${length} bytes, over the ${this.#options.maxMessageBytes}-byte cap`,
            ),
          );
          return;
        }
        this.#bodyLength = length;
        this.#buffer = this.#buffer.subarray(end + 4);
      }
      if (this.#buffer.length < this.#bodyLength) return;
      const body = this.#buffer.subarray(0, this.#bodyLength).toString('utf8');
      this.#buffer = this.#buffer.subarray(this.#bodyLength);
      this.#bodyLength = undefined;
      let message: unknown;
      try {
        message = JSON.parse(body);
      } catch {
        this.close(new Error('the server sent a message that is not JSON'));
        return;
      }
      this.#dispatch(message);
      if (this.#closed !== undefined) return;
    }
  }

  #dispatch(message: unknown): void {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) return;
    const m = message as Record<string, unknown>;
    const method = typeof m['method'] === 'string' ? m['method'] : undefined;
    const id = m['id'];
    if (method !== undefined && (typeof id === 'number' || typeof id === 'string')) {
      void this.#answer(id, method, m['params']);
      return;
    }
    if (method !== undefined) {
      try {
        this.#options.onNotification(method, m['params']);
      } catch {
        // A handler's bug must not break the stream; the pack logs what matters itself.
      }
      return;
    }
    if (typeof id !== 'number') return;
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    const error = m['error'];
    if (typeof error === 'object' && error !== null) {
      const e = error as Record<string, unknown>;
      pending.reject(
        new JsonRpcError(
          typeof e['code'] === 'number' ? e['code'] : -32603,
          typeof e['message'] === 'string' ? e['message'].slice(0, 2000) : 'unknown error',
          e['data'],
        ),
      );
    } else {
      pending.resolve(m['result'] ?? null);
    }
  }

  async #answer(id: number | string, method: string, params: unknown): Promise<void> {
    try {
      const result = await this.#options.onRequest(method, params);
      this.#write({ jsonrpc: '2.0', id, result: result ?? null });
    } catch (error) {
      const code = error instanceof JsonRpcError ? error.code : -32603;
      this.#write({ jsonrpc: '2.0', id, error: { code, message: (error as Error).message } });
    }
  }
}

function mebibytes(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(bytes < 1024 * 1024 ? 2 : 0);
}

/** The body length a header section announces, or why it is unusable. */
function parseHeaders(text: string): number | string {
  let length: number | undefined;
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon === -1) return `the server sent a header line without a colon: ${line.slice(0, 80)}`;
    if (line.slice(0, colon).trim().toLowerCase() !== 'content-length') continue;
    const value = line.slice(colon + 1).trim();
    if (!/^\d{1,12}$/.test(value))
      return `the server sent a bad Content-Length: ${value.slice(0, 40)}`;
    length = Number(value);
  }
  return length ?? 'the server sent a message without Content-Length';
}
