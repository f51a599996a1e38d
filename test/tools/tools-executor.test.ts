import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApprovalGate } from '../../src/approval/gate.ts';
import { compilePolicy } from '../../src/approval/policy.ts';
import { Executor } from '../../src/execute/executor.ts';
import { ToolRegistry } from '../../src/protocol/registry.ts';
import { searchWeb } from '../../src/tools/search-web/index.ts';
import { sendNotification } from '../../src/tools/send-notification/index.ts';
import { sendJson, startServer, type TestServer } from './http-server.ts';
import { smtpReply, startSmtp, type TestSmtp } from './smtp-server.ts';

let http: TestServer | undefined;
let smtp: TestSmtp | undefined;
afterEach(async () => {
  await http?.close();
  await smtp?.close();
  http = undefined;
  smtp = undefined;
});

function makeExecutor(
  config: Record<string, Record<string, unknown>>,
  timeoutMs = 5_000,
  allow: readonly string[] = [],
): Executor {
  const registry = new ToolRegistry();
  registry.register(searchWeb);
  registry.register(sendNotification);
  return new Executor(registry, {
    // A policy allow rule stands in for a human's approval.
    gate: new ApprovalGate({ policy: compilePolicy({ allow: [...allow] }) }),
    timeoutMs,
    retry: { attempts: 3, baseDelayMs: 5 },
    cacheTtlMs: 0,
    toolConfig: (name) => config[name] ?? {},
  });
}

describe('search_web through the executor', () => {
  test('a 5xx from the provider is retried and the third answer succeeds', async () => {
    http = await startServer();
    let calls = 0;
    http.handle((_req, res) => {
      calls += 1;
      if (calls < 3) {
        res.writeHead(503, { 'Content-Type': 'text/plain' });
        res.end('maintenance');
        return;
      }
      sendJson(res, 200, {
        results: [{ title: 'Hit', url: 'https://hit.example/', content: 'snippet' }],
      });
    });
    const executor = makeExecutor({ search_web: { provider: 'searxng', url: http.origin } });
    const result = await executor.execute({
      id: 'c1',
      name: 'search_web',
      arguments: { query: 'q' },
    });
    assert.equal(result.status, 'success', result.content);
    assert.equal(result.metadata.attempts, 3);
    assert.equal(http.requests.length, 3);
    assert.deepEqual(result.data, {
      results: [{ title: 'Hit', url: 'https://hit.example/', snippet: 'snippet' }],
    });
    assert.match(result.content, /https:\/\/hit\.example\//);
  });

  test('a 4xx is not retried and the result carries the message', async () => {
    http = await startServer((_req, res) => {
      res.writeHead(403);
      res.end();
    });
    const executor = makeExecutor({ search_web: { provider: 'searxng', url: http.origin } });
    const result = await executor.execute({
      id: 'c2',
      name: 'search_web',
      arguments: { query: 'q' },
    });
    assert.equal(result.status, 'error');
    assert.equal(result.error?.code, 'EXECUTION_FAILED');
    assert.equal(result.error?.recoverable, false);
    assert.match(result.error?.message ?? '', /search\.formats/);
    assert.equal(result.metadata.attempts, 1);
  });

  test('num_results defaults to 5 through the schema', async () => {
    http = await startServer((_req, res) =>
      sendJson(res, 200, {
        results: Array.from({ length: 8 }, (_, i) => ({
          title: `T${i}`,
          url: `https://r${i}.example/`,
          content: '',
        })),
      }),
    );
    const executor = makeExecutor({ search_web: { provider: 'searxng', url: http.origin } });
    const result = await executor.execute({
      id: 'c3',
      name: 'search_web',
      arguments: { query: 'q' },
    });
    assert.equal((result.data as { results: unknown[] }).results.length, 5);
  });
});

describe('send_notification through the executor', () => {
  test('an approved e-mail is delivered once and its Message-ID is in the result', async () => {
    smtp = await startSmtp();
    const executor = makeExecutor(
      {
        send_notification: {
          email: { host: '127.0.0.1', port: smtp.port, from: 'vaultd@example.org' },
        },
      },
      5_000,
      ['send_notification'],
    );
    const result = await executor.execute({
      id: 'm1',
      name: 'send_notification',
      arguments: { recipient: 'bob@example.com', subject: 'Hi', body: 'Hello' },
    });
    assert.equal(result.status, 'success', result.content);
    assert.equal(smtp.received.length, 1);
    assert.match(String((result.data as { message_id: string }).message_id), /^<.+@.+>$/);
  });

  test('a server that takes the message but never confirms is not retried (timeout, one delivery)', async () => {
    smtp = await startSmtp({
      onData(stream) {
        stream.resume(); // takes the data, never sends the final reply
      },
    });
    const executor = makeExecutor(
      {
        send_notification: {
          email: { host: '127.0.0.1', port: smtp.port, from: 'vaultd@example.org' },
        },
      },
      400,
      ['send_notification'],
    );
    const result = await executor.execute({
      id: 'm2',
      name: 'send_notification',
      arguments: { recipient: 'bob@example.com', subject: 'Hi', body: 'x' },
    });
    assert.equal(result.status, 'error');
    assert.equal(result.error?.code, 'TIMEOUT');
    assert.equal(result.metadata.attempts, 1);
  });

  test('a recoverable refusal before sending is still not retried for a non-idempotent tool', async () => {
    let rcptCalls = 0;
    smtp = await startSmtp({
      onRcptTo(_address, _session, callback) {
        rcptCalls += 1;
        callback(smtpReply(451, 'Try again later'));
      },
    });
    const executor = makeExecutor(
      {
        send_notification: {
          email: { host: '127.0.0.1', port: smtp.port, from: 'vaultd@example.org' },
        },
      },
      5_000,
      ['send_notification'],
    );
    const result = await executor.execute({
      id: 'm3',
      name: 'send_notification',
      arguments: { recipient: 'bob@example.com', subject: 'Hi', body: 'x' },
    });
    assert.equal(result.error?.code, 'EXECUTION_FAILED');
    assert.equal(result.error?.recoverable, true);
    assert.equal(result.metadata.attempts, 1);
    assert.equal(rcptCalls, 1);
  });

  test('without approval a dangerous call never reaches the server', async () => {
    smtp = await startSmtp();
    const executor = makeExecutor({
      send_notification: {
        email: { host: '127.0.0.1', port: smtp.port, from: 'vaultd@example.org' },
      },
    });
    const result = await executor.execute({
      id: 'm4',
      name: 'send_notification',
      arguments: { recipient: 'bob@example.com', subject: 'Hi', body: 'x' },
    });
    assert.notEqual(result.status, 'success');
    assert.equal(smtp.received.length, 0);
  });
});
