import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { get, request, type IncomingMessage } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { EventBus } from '../../src/observe/event-bus.ts';
import {
  startHttpServer,
  type HealthReport,
  type HttpServerHandle,
  type HttpServerOptions,
} from '../../src/observe/http-server.ts';
import { createMetrics } from '../../src/observe/metrics.ts';
import { silentLogger } from '../../src/observe/logger.ts';
import { captureLogger, makeResult, parsePrometheus, sampleValue, waitFor } from './helpers.ts';

const servers: HttpServerHandle[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(
  over: Partial<HttpServerOptions> = {},
): Promise<{ server: HttpServerHandle; bus: EventBus }> {
  const bus = over.bus ?? new EventBus();
  const metrics = createMetrics(
    bus,
    { queueDepth: () => 2, notesPerState: () => ({ done: 1 }), pendingApprovals: () => 0 },
    { defaultMetrics: false },
  );
  const server = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    bus,
    metrics,
    health: () => ({ ready: true, watching: true, queue_depth: 2 }),
    logger: silentLogger(),
    ...over,
  });
  servers.push(server);
  return { server, bus };
}

function fetchText(
  url: string,
  method = 'GET',
): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Send bytes as they are (no client normalises the target) and read the whole reply. */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let reply = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (reply += chunk));
    socket.on('end', () => resolve(reply));
    socket.on('error', reject);
  });
}

interface SseMessage {
  event?: string;
  id?: string;
  data?: string;
  comment?: string;
}

/** A raw SSE client over http.get that parses messages as they arrive. */
function openEvents(url: string, headers: Record<string, string> = {}) {
  const messages: SseMessage[] = [];
  const state = { ended: false, status: 0, contentType: '' };
  let buffer = '';
  let response: IncomingMessage | undefined;
  const req = get(`${url}/events`, { headers }, (res) => {
    response = res;
    state.status = res.statusCode ?? 0;
    state.contentType = String(res.headers['content-type']);
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const message: SseMessage = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) message.comment = line.slice(1).trim();
          else {
            const colon = line.indexOf(':');
            const field = line.slice(0, colon);
            const value = line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event' || field === 'id' || field === 'data') message[field] = value;
          }
        }
        messages.push(message);
      }
    });
    res.on('close', () => (state.ended = true));
  });
  req.on('error', () => (state.ended = true));
  const events = () => messages.filter((m) => m.id !== undefined);
  return {
    messages,
    events,
    state,
    req,
    pause: () => response?.pause(),
    destroy: () => req.destroy(),
  };
}

const TOKEN = 'a-token-of-the-operator-0123456789';

/** GET with a connection of its own; the status, headers and body, or the error's code. */
function getOnce(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: IncomingMessage['headers']; body: string } | string> {
  return new Promise((resolve) => {
    const req = request(url, { method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', (err: Error & { code?: string }) => resolve(err.code ?? err.message));
    req.end();
  });
}

/**
 * Connections that ask `GET /health` without a token every `everyMs` on keep-alive (as
 * /work/scratch/http-review/hold.mjs does), each opened again 50 ms after it is closed; or,
 * with `idle`, connections that send nothing.
 */
function holdConnections(port: number, count: number, options: { idle?: boolean } = {}) {
  let stopped = false;
  const live = new Set<Socket>();
  const timers: NodeJS.Timeout[] = [];
  const open = (): void => {
    if (stopped) return;
    const socket = connect(port, '127.0.0.1');
    live.add(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    const ask = (): void => {
      if (!options.idle && socket.writable)
        socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    };
    socket.on('connect', ask);
    const timer = setInterval(ask, 300);
    timers.push(timer);
    socket.on('close', () => {
      clearInterval(timer);
      live.delete(socket);
      setTimeout(open, 50);
    });
  };
  for (let i = 0; i < count; i++) open();
  return {
    stop(): void {
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      for (const socket of live) socket.destroy();
    },
  };
}

const claim = (bus: EventBus, note: string) =>
  bus.emit('note.claimed', { note, from: 'Needs_Action' });

describe('startHttpServer', () => {
  it('GET /health answers 200 with the report when ready and 503 when not', async () => {
    let report: HealthReport = { ready: true, watching: true, queue_depth: 5, version: '0.1.0' };
    const { server } = await start({ health: () => report });
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    let res = await fetchText(`${server.url}/health`);
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(JSON.parse(res.body), report);
    report = { ready: false, watching: false, queue_depth: 0 };
    res = await fetchText(`${server.url}/health?verbose=1`);
    assert.equal(res.status, 503);
    assert.equal(JSON.parse(res.body).ready, false);
  });

  it('GET /health answers 503 when the health callback throws', async () => {
    const { logger, records } = captureLogger();
    const { server } = await start({
      logger,
      health: () => {
        throw new Error('no');
      },
    });
    const res = await fetchText(`${server.url}/health`);
    assert.equal(res.status, 503);
    assert.ok(records.some((r) => r['msg'] === 'health check failed'));
  });

  it('GET /metrics answers Prometheus text with its content type', async () => {
    const { server, bus } = await start();
    bus.emit('tool.result', {
      note: 'n.md',
      callId: 'c1',
      tool: 'search_web',
      result: makeResult('search_web', 'success', 12),
    });
    const res = await fetchText(`${server.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const { samples } = parsePrometheus(res.body);
    assert.equal(sampleValue(samples, 'vaultd_queue_depth'), 2);
    assert.equal(
      sampleValue(samples, 'vaultd_tool_calls_total', { tool: 'search_web', status: 'success' }),
      1,
    );
  });

  it('answers 404 JSON for unknown paths and 405 with Allow for other methods', async () => {
    const { server } = await start();
    const missing = await fetchText(`${server.url}/nope`);
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.body).error, 'not found');
    for (const path of ['/health', '/metrics', '/events']) {
      const res = await fetchText(`${server.url}${path}`, 'POST');
      assert.equal(res.status, 405, path);
      assert.equal(res.headers['allow'], 'GET, HEAD, OPTIONS');
      assert.match(JSON.parse(res.body).error, /POST/);
    }
  });

  it('lets an allowed browser origin read its answers (CORS, preflight included) and no other', async () => {
    // allowed_origins accepted a page's requests but sent no CORS headers, so the browser kept
    // every answer from the page that was allowed to ask.
    const { server } = await start({
      allowedOrigins: ['https://dash.example'],
      apiToken: TOKEN,
      approvals: { list: () => [], decide: () => Promise.reject(new Error('no')) },
    });
    const ask = (path: string, method: string, headers: Record<string, string>) =>
      new Promise<{ status: number; headers: IncomingMessage['headers'] }>((resolve, reject) => {
        const req = request(`${server.url}${path}`, { method, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        });
        req.on('error', reject);
        req.end();
      });
    const allowed = await ask('/health', 'GET', { origin: 'https://Dash.example' });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://Dash.example');
    assert.equal(allowed.headers['vary'], 'Origin');
    assert.equal(allowed.headers['access-control-allow-credentials'], undefined);
    const preflight = await ask(`/approvals/apr_${'a'.repeat(26)}/approve`, 'OPTIONS', {
      origin: 'https://dash.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://dash.example');
    assert.match(String(preflight.headers['access-control-allow-methods']), /\bPOST\b/);
    assert.match(String(preflight.headers['access-control-allow-headers']), /\bauthorization\b/);
    const other = await ask('/health', 'GET', { origin: 'https://evil.example' });
    assert.equal(other.status, 403);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    const otherPreflight = await ask('/approvals', 'OPTIONS', { origin: 'https://evil.example' });
    assert.equal(otherPreflight.status, 403);
    assert.equal(otherPreflight.headers['access-control-allow-origin'], undefined);
    const noOrigin = await ask('/health', 'GET', {});
    assert.equal(noOrigin.headers['access-control-allow-origin'], undefined);
  });

  it('answers 400 to a request target that is not a path, and stays up (review finding)', async () => {
    // `GET //` threw Invalid URL inside the request handler, which ended the daemon for anyone
    // who could reach the port, before any token check.
    const { server } = await start({ apiToken: 'a-token-of-the-operator-0123456789' });
    const { port } = new URL(server.url);
    for (const target of ['//', 'http://', '//x:y@/']) {
      const reply = await rawRequest(
        Number(port),
        `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      );
      assert.match(reply, /^HTTP\/1\.1 400 /, target);
    }
    assert.equal((await fetchText(`${server.url}/health`)).status, 200);
  });

  it('lists pending approvals a page at a time, within a byte budget (review finding)', async () => {
    // Agents can fill the list with calls of 50 KB each: the whole list as one answer was 203 MB
    // at 4,000 requests, built on the main thread for 11 s.
    const token = 'a-token-of-the-operator-0123456789';
    const views = Array.from({ length: 250 }, (_, i) => ({
      id: `apr_${String(i).padStart(26, 'a')}`,
      note: `Pending_Approval/n${i}.md`,
      call_id: `c${i}`,
      tool: 'send_notification',
      arguments: { body: i < 200 ? 'x'.repeat(60_000) : 'short' },
      preview: null,
      reason: 'dangerous',
      requested_at: new Date(Date.UTC(2026, 10, 28, 0, 0, i)).toISOString(),
      expires_at: '2026-12-05T00:00:00.000Z',
      state: 'pending',
    }));
    const { server } = await start({
      apiToken: token,
      approvals: { list: () => views.toReversed(), decide: () => Promise.reject(new Error('no')) },
    });
    const page = async (query: string) => {
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          `${server.url}/approvals${query}`,
          { headers: { authorization: `Bearer ${token}` } },
          (r) => {
            let body = '';
            r.setEncoding('utf8');
            r.on('data', (c: string) => (body += c));
            r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
      return {
        status: res.status,
        bytes: res.body.length,
        ...(JSON.parse(res.body) as {
          approvals?: { call_id: string }[];
          next?: string | null;
          error?: string;
        }),
      };
    };
    const seen: string[] = [];
    let next: string | null = null;
    let pages = 0;
    do {
      const got = await page(next === null ? '' : `?after=${encodeURIComponent(next)}`);
      assert.equal(got.status, 200);
      assert.ok(got.bytes < 5 * 1024 * 1024, `a page of ${got.bytes} bytes`);
      seen.push(...(got.approvals ?? []).map((a) => a.call_id));
      next = got.next ?? null;
      pages++;
    } while (next !== null && pages < 20);
    assert.deepEqual(
      seen,
      views.map((v) => v.call_id),
      'every request once, oldest first',
    );
    assert.ok(pages >= 4, `${pages} pages`);
    const small = await page(
      '?limit=10&after=' + encodeURIComponent(`${views[199]?.requested_at}~${views[199]?.id}`),
    );
    assert.deepEqual(
      small.approvals?.map((a) => a.call_id),
      views.slice(200, 210).map((v) => v.call_id),
    );
    assert.equal((await page('?limit=0')).status, 400);
    assert.equal((await page('?limit=5000')).status, 400);
  });

  it('GET /events streams bus events in order with event names and ids', async () => {
    const { server, bus } = await start();
    const client = openEvents(server.url);
    await waitFor(() => bus.listenerCount === 3, 5000, 'SSE subscription');
    await waitFor(() => client.state.status !== 0, 5000, 'response headers');
    assert.equal(client.state.status, 200);
    assert.match(client.state.contentType, /^text\/event-stream/);
    claim(bus, 'a.md');
    bus.emit('tool.call', {
      note: 'a.md',
      callId: 'c1',
      tool: 'search_web',
      arguments: { query: 'multi\nline' },
    });
    bus.emit('note.moved', { note: 'a.md', from: 'In_Progress', to: 'Done', state: 'done' });
    await waitFor(() => client.events().length === 3, 5000, 'three events');
    const events = client.events();
    assert.deepEqual(
      events.map((m) => [m.event, m.id]),
      [
        ['note.claimed', '1'],
        ['tool.call', '2'],
        ['note.moved', '3'],
      ],
    );
    const data = JSON.parse(events[1]?.data ?? '');
    assert.equal(data.seq, 2);
    assert.equal(data.name, 'tool.call');
    assert.deepEqual(data.payload.arguments, { query: 'multi\nline' });
    client.destroy();
    await waitFor(() => bus.listenerCount === 2, 5000, 'client removed on close');
  });

  it('replays buffered events after Last-Event-ID before live ones', async () => {
    const { server, bus } = await start();
    for (const n of ['a', 'b', 'c']) claim(bus, `${n}.md`);
    const client = openEvents(server.url, { 'Last-Event-ID': '1' });
    await waitFor(() => client.events().length === 2, 5000, 'replay');
    claim(bus, 'd.md');
    await waitFor(() => client.events().length === 3, 5000, 'live event');
    assert.deepEqual(
      client.events().map((m) => m.id),
      ['2', '3', '4'],
    );
  });

  it('tells a client when its Last-Event-ID is older than the replay buffer', async () => {
    const { server, bus } = await start({ bus: new EventBus({ historySize: 2 }) });
    for (let i = 1; i <= 5; i += 1) claim(bus, `${i}.md`);
    const client = openEvents(server.url, { 'Last-Event-ID': '1' });
    await waitFor(() => client.events().length === 2, 5000, 'replay');
    const gap = client.messages.find((m) => m.event === 'replay.gap');
    assert.deepEqual(JSON.parse(gap?.data ?? '{}'), { after: 1, oldest: 4 });
    assert.deepEqual(
      client.events().map((m) => m.id),
      ['4', '5'],
    );
  });

  it('sends heartbeat comments', async () => {
    const { server } = await start({ heartbeatMs: 20 });
    const client = openEvents(server.url);
    await waitFor(() => client.messages.some((m) => m.comment === 'ping'), 5000, 'heartbeat');
  });

  it('drops a client that stops reading instead of buffering without bound', async () => {
    const { logger, records } = captureLogger();
    const { server, bus } = await start({ logger, maxClientBufferBytes: 64 * 1024 });
    const slow = openEvents(server.url);
    const fast = openEvents(server.url);
    await waitFor(() => bus.listenerCount === 4, 5000, 'two SSE subscriptions');
    slow.pause();
    const big = 'x'.repeat(256 * 1024);
    for (let i = 0; i < 400 && bus.listenerCount === 4; i += 1) {
      bus.emit('tool.call', { note: 'n.md', callId: `c${i}`, tool: 't', arguments: { big } });
      await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(() => bus.listenerCount === 3, 5000, 'slow client dropped');
    assert.ok(records.some((r) => r['msg'] === 'event client dropped: it stopped reading'));
    const sent = bus.lastSeq;
    await waitFor(() => fast.events().length === sent, 10_000, 'fast client got every event');
    assert.equal(fast.state.ended, false);
  });

  it('refuses SSE clients beyond the limit with 503', async () => {
    const { server, bus } = await start({ maxSseClients: 1 });
    openEvents(server.url);
    await waitFor(() => bus.listenerCount === 3, 5000, 'first client');
    const second = await fetchText(`${server.url}/events`);
    assert.equal(second.status, 503);
  });

  it('close() ends event streams and stops listening', async () => {
    // A queue depth no other server in the test run reports: the freed port may be taken by
    // another test's listener (tests run in parallel) before the probe below, which once made the
    // probe end in "socket hang up" instead of ECONNREFUSED. What must not happen is this server
    // answering.
    const health = () => ({ ready: true, watching: true, queue_depth: 7_031 });
    const { server, bus } = await start({ health });
    const client = openEvents(server.url);
    await waitFor(() => bus.listenerCount === 3, 5000, 'SSE subscription');
    assert.match((await fetchText(`${server.url}/health`)).body, /7031/);
    await server.close();
    await waitFor(() => client.state.ended, 5000, 'stream ended');
    await waitFor(() => bus.listenerCount === 2, 5000, 'subscription removed');
    const probe = await fetchText(`${server.url}/health`).then(
      (res) => res.body,
      (error: Error & { code?: string }) => error.code ?? error.message,
    );
    assert.doesNotMatch(probe, /7031/);
    await server.close();
  });

  it('closes the connection after every answer to a request without the token, keeps it for the token (review finding F2)', async () => {
    const { server } = await start({ apiToken: TOKEN });
    for (const path of ['/health', '/metrics', '/events', '/approvals', '/nope']) {
      const res = await getOnce(`${server.url}${path}`, { connection: 'keep-alive' });
      assert.equal(typeof res, 'object', path);
      assert.equal(
        (res as { headers: IncomingMessage['headers'] }).headers['connection'],
        'close',
        path,
      );
    }
    const wrong = await getOnce(`${server.url}/health`, {
      connection: 'keep-alive',
      authorization: 'Bearer not-the-token-0123456789',
    });
    assert.equal((wrong as { headers: IncomingMessage['headers'] }).headers['connection'], 'close');
    const held = await getOnce(`${server.url}/health`, {
      connection: 'keep-alive',
      authorization: `Bearer ${TOKEN}`,
    });
    assert.equal((held as { status: number }).status, 200);
    assert.equal(
      (held as { headers: IncomingMessage['headers'] }).headers['connection'],
      'keep-alive',
    );
    // The server closes the socket itself, not only says it will.
    const { port } = new URL(server.url);
    const reply = await rawRequest(
      Number(port),
      `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`,
    );
    assert.match(reply, /^HTTP\/1\.1 200 /);
  });

  for (const idle of [false, true]) {
    it(`keeps slots for the token holder while ${idle ? 'idle connections' : 'tokenless keep-alive requests'} fill the others (review finding F2)`, async () => {
      // 64 keep-alive connections asking GET /health without a token every 3 s took every slot:
      // each request of the token holder was reset, /approvals, /health and /metrics alike.
      const max = 16;
      const { server } = await start({ apiToken: TOKEN, maxConnections: max });
      const attacker = holdConnections(Number(new URL(server.url).port), max + 4, { idle });
      try {
        await new Promise((resolve) => setTimeout(resolve, 400));
        for (let i = 0; i < 5; i++) {
          const res = await getOnce(`${server.url}/health`, { authorization: `Bearer ${TOKEN}` });
          assert.equal(typeof res === 'string' ? res : res.status, 200, `request ${i}`);
        }
      } finally {
        attacker.stop();
      }
    });
  }

  it('keeps /health answered while idle event streams hold connections, with no token (review finding F2)', async () => {
    const max = 8;
    const { server, bus } = await start({ maxConnections: max });
    const streams = Array.from({ length: max }, () => openEvents(server.url));
    try {
      await waitFor(
        () => streams.filter((s) => s.state.status !== 0).length === max,
        5000,
        'every stream answered',
      );
      assert.ok(bus.listenerCount < 2 + max, 'not every stream was taken');
      const res = await getOnce(`${server.url}/health`);
      assert.equal(typeof res === 'string' ? res : res.status, 200);
    } finally {
      for (const s of streams) s.destroy();
    }
  });

  it('answers OPTIONS with the methods of the path, 404 on an unknown path, and HEAD wherever GET', async () => {
    // OPTIONS on any path answered 204 with GET, POST, OPTIONS; HEAD /health answered 405.
    const backend = { list: () => [], decide: () => Promise.reject(new Error('no')) };
    const { server } = await start({ apiToken: TOKEN, approvals: backend });
    const options = async (path: string) => getOnce(`${server.url}${path}`, {}, 'OPTIONS');
    const missing = await options('/nope');
    assert.equal(typeof missing === 'string' ? missing : missing.status, 404);
    for (const path of ['/health', '/metrics', '/events', '/approvals']) {
      const res = await options(path);
      assert.equal(typeof res === 'string' ? res : res.status, 204, path);
      assert.equal(
        (res as { headers: IncomingMessage['headers'] }).headers['allow'],
        'GET, HEAD, OPTIONS',
        path,
      );
    }
    const decide = await options(`/approvals/apr_${'a'.repeat(26)}/reject`);
    assert.equal(
      (decide as { headers: IncomingMessage['headers'] }).headers['allow'],
      'POST, OPTIONS',
    );
    const off = await start();
    const apiOff = await getOnce(`${off.server.url}/approvals`, {}, 'OPTIONS');
    assert.equal(typeof apiOff === 'string' ? apiOff : apiOff.status, 404, 'the API is off');
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const path of ['/health', '/metrics', '/events', '/approvals']) {
      const get = await getOnce(`${server.url}${path}`, auth, path === '/events' ? 'HEAD' : 'GET');
      const head = await getOnce(`${server.url}${path}`, auth, 'HEAD');
      assert.equal(typeof head === 'string' ? head : head.status, 200, path);
      assert.equal((head as { body: string }).body, '', path);
      assert.equal(
        (head as { headers: IncomingMessage['headers'] }).headers['content-type'],
        (get as { headers: IncomingMessage['headers'] }).headers['content-type'],
        path,
      );
    }
    const headNoToken = await getOnce(`${server.url}/events`, {}, 'HEAD');
    assert.equal(typeof headNoToken === 'string' ? headNoToken : headNoToken.status, 401);
  });

  it('rejects with the address when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      await assert.rejects(
        start({ port }),
        new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`),
      );
    } finally {
      blocker.close();
    }
  });
});
