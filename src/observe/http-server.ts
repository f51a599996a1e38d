import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { EventBus } from './event-bus.ts';
import { SseClient, formatSseControl, formatSseEvent, parseLastEventId } from './sse-stream.ts';

/** What `/health` reports; extra keys are passed through. */
export interface HealthReport {
  readonly ready: boolean;
  readonly watching: boolean;
  readonly queue_depth: number;
  readonly [key: string]: unknown;
}

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  /** Address to bind; config defaults it to 127.0.0.1. */
  readonly host: string;
  /** Port to bind; 0 picks a free one. */
  readonly port: number;
  readonly bus: EventBus;
  /** Anything with Prometheus text and its content type, e.g. the result of `createMetrics`. */
  readonly metrics: { readonly contentType: string; text(): Promise<string> };
  /** Called on every `GET /health`; 200 when `ready`, else 503. */
  health(): HealthReport;
  readonly logger: Logger;
  /** Interval of SSE heartbeat comments; defaults to 15 s. */
  readonly heartbeatMs?: number;
  /** Unread bytes an SSE client may pile up before it is dropped; defaults to 1 MiB. */
  readonly maxClientBufferBytes?: number;
  /** SSE clients served at once; more get 503. Defaults to 64. */
  readonly maxSseClients?: number;
}

/** A running HTTP listener. */
export interface HttpServerHandle {
  /** Base URL, e.g. `http://127.0.0.1:9464`. */
  readonly url: string;
  readonly port: number;
  /** End SSE streams, close every connection and stop listening. */
  close(): Promise<void>;
}

/**
 * Start the observability listener: `GET /health`, `GET /metrics`, `GET /events` (Server-Sent
 * Events of the bus, with `Last-Event-ID` replay from its ring buffer). Other paths get 404,
 * other methods 405, both as JSON.
 * @param options host and port to bind, the bus, metrics, health callback, logger and limits
 *   (heartbeat 15 s, 1 MiB unread per SSE client, 64 SSE clients).
 * @returns the URL, the bound port and `close()`; rejects when the address cannot be bound.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServerHandle> {
  const { bus, metrics, logger } = options;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const maxBufferedBytes = options.maxClientBufferBytes ?? 1024 * 1024;
  const maxSseClients = options.maxSseClients ?? 64;
  const clients = new Set<SseClient>();
  let closing = false;

  const sendJson = (
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
      ...headers,
    });
    res.end(text);
  };

  const serveHealth = (res: ServerResponse): void => {
    let report: HealthReport;
    try {
      report = options.health();
    } catch (err) {
      logger.error({ err }, 'health check failed');
      sendJson(res, 503, { ready: false, error: 'health check failed' });
      return;
    }
    sendJson(res, report.ready ? 200 : 503, report);
  };

  const serveMetrics = async (res: ServerResponse): Promise<void> => {
    let text: string;
    try {
      text = await metrics.text();
    } catch (err) {
      logger.error({ err }, 'metrics collection failed');
      sendJson(res, 500, { error: 'metrics collection failed' });
      return;
    }
    res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
    res.end(text);
  };

  const serveEvents = (req: IncomingMessage, res: ServerResponse): void => {
    if (closing || clients.size >= maxSseClients) {
      sendJson(
        res,
        503,
        { error: closing ? 'shutting down' : 'too many event clients' },
        { 'retry-after': '5' },
      );
      return;
    }
    const client = new SseClient(res, { maxBufferedBytes });
    clients.add(client);
    client.write(`retry: 2000\n: vaultd events\n\n`);
    // Replay and subscribe in one synchronous block: the bus emits synchronously on this thread,
    // so no event can fall between the two.
    const lastId = parseLastEventId(req.headers['last-event-id']);
    if (lastId !== undefined) {
      // An id above our counter comes from an earlier run of the daemon: replay what we have.
      const after = lastId > bus.lastSeq ? 0 : lastId;
      const { events, complete } = bus.since(after);
      if (!complete) {
        client.write(
          formatSseControl('replay.gap', {
            after: lastId,
            oldest: events[0]?.seq ?? bus.lastSeq + 1,
          }),
        );
      }
      for (const event of events) client.write(formatSseEvent(event));
    }
    const unsubscribe = bus.subscribe((event) => {
      if (!client.write(formatSseEvent(event))) remove();
    });
    const remove = (): void => {
      if (!clients.delete(client)) return;
      unsubscribe();
      if (client.dropped)
        logger.warn(
          { remote: req.socket.remoteAddress },
          'event client dropped: it stopped reading',
        );
      else logger.debug('event client disconnected');
    };
    res.on('close', remove);
    logger.debug({ lastEventId: lastId, clients: clients.size }, 'event client connected');
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const known = path === '/health' || path === '/metrics' || path === '/events';
    if (!known) {
      sendJson(res, 404, { error: 'not found', paths: ['/health', '/metrics', '/events'] });
      return;
    }
    if (req.method !== 'GET') {
      sendJson(res, 405, { error: `method ${req.method ?? ''} not allowed` }, { allow: 'GET' });
      return;
    }
    if (path === '/health') serveHealth(res);
    else if (path === '/metrics') void serveMetrics(res);
    else serveEvents(req, res);
  });
  server.on('clientError', (err, socket) => {
    logger.debug({ err }, 'bad HTTP request');
    socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => {
      reject(
        new Error(`cannot listen on ${options.host}:${options.port}: ${err.message}`, {
          cause: err,
        }),
      );
    };
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'HTTP server error'));

  const heartbeat = setInterval(() => {
    for (const client of clients) client.write(': ping\n\n');
  }, heartbeatMs);
  heartbeat.unref();

  const port = (server.address() as AddressInfo).port;
  const hostInUrl = options.host.includes(':') ? `[${options.host}]` : options.host;
  logger.info({ host: options.host, port }, 'HTTP listener started');

  let closed: Promise<void> | undefined;
  return {
    url: `http://${hostInUrl}:${port}`,
    port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        clearInterval(heartbeat);
        for (const client of clients) client.end();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
