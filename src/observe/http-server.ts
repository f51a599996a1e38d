import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import {
  allowsMethod,
  DECISION_PATH,
  hasBearerToken,
  serveApprovals,
  type ApprovalsBackend,
} from './approvals-api.ts';
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
  /** Host names (with or without a port) accepted besides the loopback names; default none. */
  readonly allowedHosts?: readonly string[];
  /**
   * Browser origins (`https://dash.example`) accepted, and told they may read the answers (CORS,
   * preflight included); by default any `Origin` is refused.
   */
  readonly allowedOrigins?: readonly string[];
  /**
   * Connections open at once. Default 64. With a token configured, a quarter of them (at least
   * one) are kept for connections that have shown it: the others are capped below the total, and
   * the oldest idle one of them is closed to make room for a new connection.
   */
  readonly maxConnections?: number;
  /** Bearer token of the approvals API; without it the API is off. */
  readonly apiToken?: string;
  /** The approvals the API lists and decides. */
  readonly approvals?: ApprovalsBackend;
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
  const clients = new Set<SseClient>();
  const tokenConfigured = options.apiToken !== undefined && options.apiToken !== '';
  const approvalsOn = tokenConfigured && options.approvals !== undefined;
  const maxConnections = options.maxConnections ?? 64;
  // A quarter of the slots, at least one, is kept: with a token, for connections that showed it;
  // without one (nobody can show it), from event streams, which never end on their own, so that
  // idle streams opened by anyone cannot take every slot and `/health` stays answered.
  const kept = Math.min(maxConnections - 1, Math.max(1, Math.floor(maxConnections / 4)));
  const slots = connectionSlots(
    maxConnections,
    tokenConfigured ? maxConnections - kept : maxConnections,
  );
  const maxSseClients = tokenConfigured
    ? (options.maxSseClients ?? 64)
    : Math.min(options.maxSseClients ?? 64, Math.max(1, maxConnections - kept));
  let closing = false;
  let boundPort = options.port;
  const extraHosts = new Set((options.allowedHosts ?? []).map((h) => h.toLowerCase()));
  const origins = new Set((options.allowedOrigins ?? []).map((o) => o.toLowerCase()));
  // DNS rebinding: a web page that made a name resolve to 127.0.0.1 still sends its own name in
  // Host. Only loopback names (and configured ones) are answered.
  const hostAllowed = (header: string | undefined): boolean => {
    if (header === undefined || header === '') return false;
    const host = header.toLowerCase();
    if (extraHosts.has(host)) return true;
    const bare = host.replace(/:\d+$/, '');
    const port = /:(\d+)$/.exec(host)?.[1];
    if (port !== undefined && Number(port) !== boundPort) return extraHosts.has(bare);
    return ['localhost', '127.0.0.1', '[::1]'].includes(bare) || extraHosts.has(bare);
  };

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
      // The newest events that fit in half the client's buffer: a long replay is cut (and said
      // so), never a reason to drop the client.
      const budget = Math.floor(maxBufferedBytes / 2);
      const texts: string[] = [];
      let bytes = 0;
      for (let i = events.length - 1; i >= 0; i--) {
        const text = formatSseEvent(events[i] as (typeof events)[number]);
        bytes += Buffer.byteLength(text);
        if (bytes > budget) break;
        texts.unshift(text);
      }
      const skipped = events.length - texts.length;
      if (!complete || skipped > 0) {
        client.write(
          formatSseControl('replay.gap', {
            after: lastId,
            oldest: events[skipped]?.seq ?? bus.lastSeq + 1,
          }),
        );
      }
      for (const text of texts) client.write(text);
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
    // A throw in a request handler left uncaught ends the process: `GET //` (an Invalid URL)
    // stopped the daemon for anyone who could reach the port, no token needed (review finding).
    try {
      route(req, res);
    } catch (err) {
      logger.error({ err }, 'HTTP request failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      else res.destroy();
    }
  });

  const route = (req: IncomingMessage, res: ServerResponse): void => {
    // With a token configured, a connection that has not shown it is closed after every answer:
    // anyone on the host could otherwise hold every connection slot with keep-alive requests
    // (a tokenless `GET /health` every few seconds) and lock the token holder out (review
    // finding F2). One that shows the token keeps its slot, in the reserved share.
    if (tokenConfigured) {
      if (hasBearerToken(req.headers.authorization, options.apiToken as string))
        slots.prove(req.socket);
      else if (!slots.proven(req.socket)) res.setHeader('connection', 'close');
    }
    if (!hostAllowed(req.headers.host)) {
      res.writeHead(421, { 'content-length': 0, connection: 'close' });
      res.end();
      return;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin.toLowerCase())) {
      sendJson(res, 403, { error: 'requests from web pages are refused' });
      return;
    }
    // An origin the operator allowed may read the answers (CORS). A bearer token is a header, not
    // a cookie: no credentials are allowed, and a browser asks first (preflight) for it.
    if (origin !== undefined) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('vary', 'Origin');
    }
    const path = pathOf(req.url);
    if (path === null) {
      sendJson(res, 400, { error: 'the request target is not a valid path' });
      return;
    }
    if (req.method === 'OPTIONS') {
      // The methods of this path, or 404 where no path is (an unknown path, or the approvals API
      // while it is off), as a GET there would answer.
      const methods = methodsOf(path, approvalsOn);
      if (methods === null) {
        sendJson(res, 404, { error: 'not found' });
        return;
      }
      res.writeHead(204, {
        allow: [...methods, 'OPTIONS'].join(', '),
        ...(origin === undefined
          ? {}
          : {
              'access-control-allow-methods': methods.join(', '),
              'access-control-allow-headers': 'authorization, content-type, last-event-id',
              'access-control-max-age': '600',
            }),
        'content-length': 0,
      });
      res.end();
      return;
    }
    if (path === '/approvals' || path.startsWith('/approvals/')) {
      void serveApprovals(req, res, path, {
        token: options.apiToken,
        backend: options.approvals,
        sendJson,
      }).catch((err: unknown) => {
        logger.error({ err }, 'approvals API failed');
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      });
      return;
    }
    const known = path === '/health' || path === '/metrics' || path === '/events';
    if (!known) {
      sendJson(res, 404, { error: 'not found', paths: ['/health', '/metrics', '/events'] });
      return;
    }
    // HEAD wherever GET: the same status and headers, no body (Node leaves it out).
    if (!allowsMethod(req, res, sendJson, ['GET', 'HEAD'])) return;
    if (path === '/health') serveHealth(res);
    else if (path === '/metrics') void serveMetrics(res);
    else if (
      // The events carry every call's arguments and results: with a token configured, they are
      // for its holders only, as the approvals are (any local user can open a loopback port).
      options.apiToken !== undefined &&
      options.apiToken !== '' &&
      !hasBearerToken(req.headers.authorization, options.apiToken)
    ) {
      sendJson(res, 401, { error: 'a bearer token is needed' }, { 'www-authenticate': 'Bearer' });
    } else if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.end();
    } else serveEvents(req, res);
  };
  // Bounded: a flood of idle sockets cannot exhaust the daemon's file descriptors. The total is
  // kept by `slots`; Node's own cap, one above it, only bounds the connection being accepted.
  server.maxConnections = maxConnections + 1;
  server.on('connection', (socket: Socket) => slots.add(socket));
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    slots.busy(req.socket, +1);
    res.once('close', () => slots.busy(req.socket, -1));
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  server.setTimeout(60_000, (socket) => socket.destroy());
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
  boundPort = port;
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

/** The path of a request target, or null when it is not one (`//`, `http://`). */
function pathOf(target: string | undefined): string | null {
  try {
    return new URL(target ?? '/', 'http://localhost').pathname;
  } catch {
    return null;
  }
}

/**
 * The methods a path answers (without OPTIONS), or null when there is no such path.
 * @param path the request's path.
 * @param approvalsOn whether the approvals API exists (a token and a backend).
 */
function methodsOf(path: string, approvalsOn: boolean): readonly string[] | null {
  if (path === '/health' || path === '/metrics' || path === '/events') return ['GET', 'HEAD'];
  if (!approvalsOn) return null;
  if (path === '/approvals') return ['GET', 'HEAD'];
  if (DECISION_PATH.test(path)) return ['POST'];
  return null;
}

/**
 * The connection slots of the listener. At most `max` connections are open, and at most
 * `unprovenMax` of them have not shown the token: when a new connection goes past either, the
 * oldest idle connection that has not (no request in progress, in order of arrival) is closed,
 * or the new one when every such connection is busy. A connection that showed the token is never
 * closed for another.
 * @param max connections open at once.
 * @param unprovenMax connections open at once that have not shown the token.
 */
function connectionSlots(max: number, unprovenMax: number) {
  /** Connections that have not shown the token, oldest first, with their requests in progress. */
  const unproven = new Map<Socket, number>();
  const provenSockets = new Set<Socket>();
  const total = (): number => unproven.size + provenSockets.size;
  const evictIdle = (except: Socket): boolean => {
    for (const [socket, requests] of unproven) {
      if (socket === except || requests > 0) continue;
      unproven.delete(socket);
      socket.destroy();
      return true;
    }
    return false;
  };
  return {
    add(socket: Socket): void {
      unproven.set(socket, 0);
      socket.once('close', () => {
        unproven.delete(socket);
        provenSockets.delete(socket);
      });
      while (total() > max || unproven.size > unprovenMax) {
        if (evictIdle(socket)) continue;
        unproven.delete(socket);
        socket.destroy();
        return;
      }
    },
    busy(socket: Socket, delta: number): void {
      const requests = unproven.get(socket);
      if (requests !== undefined) unproven.set(socket, Math.max(0, requests + delta));
    },
    prove(socket: Socket): void {
      if (!unproven.delete(socket)) return;
      provenSockets.add(socket);
    },
    proven(socket: Socket): boolean {
      return provenSockets.has(socket);
    },
  };
}
