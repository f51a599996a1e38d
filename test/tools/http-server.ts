import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as the test server saw it. */
export interface SeenRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** A real HTTP server on 127.0.0.1 whose answers a test sets per request. */
export interface TestServer {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  readonly requests: SeenRequest[];
  /** Replace the handler; it gets the request with its body already read. */
  handle(handler: (request: SeenRequest, response: ServerResponse) => void): void;
  close(): Promise<void>;
}

/**
 * Start an HTTP server on 127.0.0.1, port 0, that records every request.
 * @param handler how to answer; can be replaced later with `handle`.
 */
export async function startServer(
  handler: (request: SeenRequest, response: ServerResponse) => void = (_req, res) => res.end(),
): Promise<TestServer> {
  let current = handler;
  const requests: SeenRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const seen: SeenRequest = {
        method: req.method ?? 'GET',
        url: new URL(req.url ?? '/', 'http://127.0.0.1'),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(seen);
      current(seen, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    handle(next) {
      current = next;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Answer with a JSON body.
 * @param response the response to end.
 * @param status HTTP status.
 * @param body serialised with JSON.stringify.
 * @param headers extra headers.
 */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
  response.end(JSON.stringify(body));
}
