import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { sharedAjv } from '../../src/protocol/ajv.ts';
import { searchWeb, type SearchWebArgs } from '../../src/tools/search-web/index.ts';
import type { SearchOutput } from '../../src/tools/search-web/types.ts';
import { makeContext } from './context.ts';
import { freePort, rejectsWith } from './helpers.ts';
import { sendJson, startServer, type TestServer } from './http-server.ts';

const fixture = (name: string): string =>
  readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8');

function search(args: SearchWebArgs, config: Record<string, unknown>): Promise<SearchOutput> {
  const { ctx } = makeContext(config);
  return searchWeb.handler(args, ctx) as Promise<SearchOutput>;
}

/** Assert the promise rejects with a ToolError of that code, and return it. */

let server: TestServer;
before(async () => {
  server = await startServer();
});
afterEach(() => {
  server.requests.length = 0;
  delete process.env['VAULTD_TEST_BRAVE_KEY'];
  delete process.env['VAULTD_TEST_TAVILY_KEY'];
});
after(() => server.close());

describe('search_web declaration', () => {
  test('is safe, read-only, idempotent, with num_results 1–20 defaulting to 5', () => {
    assert.equal(searchWeb.name, 'search_web');
    assert.equal(searchWeb.safety, 'safe');
    assert.equal(searchWeb.readOnly, true);
    assert.equal(searchWeb.idempotent, true);
    assert.deepEqual(searchWeb.required, ['query']);
    assert.deepEqual(searchWeb.parameters['num_results'], {
      type: 'integer',
      minimum: 1,
      maximum: 20,
      default: 5,
      description: 'How many hits to return, 1 to 20.',
    });
    assert.ok(searchWeb.configSchema);
  });
});

describe('SearXNG provider', () => {
  const searxng = () => ({ provider: 'searxng', url: `${server.origin}/searx/` });

  test('asks /search with format=json and returns cleaned, de-duplicated, truncated hits', async () => {
    server.handle((_req, res) =>
      sendJson(res, 200, {
        query: 'agent frameworks',
        number_of_results: 0,
        results: [
          {
            url: 'https://example.org/a',
            title: 'A <span class="highlight">one</span>',
            content: 'first &amp; best',
            engine: 'duckduckgo',
            engines: ['duckduckgo'],
            score: 2,
            category: 'general',
          },
          {
            url: 'https://www.example.org/a/',
            title: 'A again',
            content: 'dup',
            engine: 'bing',
            score: 1,
          },
          { url: 'javascript:alert(1)', title: 'bad', content: 'x', engine: 'x' },
          {
            url: 'https://example.com/b',
            title: '',
            content: '  spaced\n  out  ',
            engine: 'brave',
          },
          { url: 'https://example.com/c', title: 'C', content: 'third', engine: 'brave' },
        ],
        answers: [],
        corrections: [],
        infoboxes: [],
        suggestions: [],
        unresponsive_engines: [],
      }),
    );
    const out = await search({ query: ' agent frameworks ', num_results: 2 }, searxng());
    assert.deepEqual(out, {
      results: [
        { title: 'A one', url: 'https://example.org/a', snippet: 'first & best' },
        { title: 'https://example.com/b', url: 'https://example.com/b', snippet: 'spaced out' },
      ],
    });
    const seen = server.requests[0];
    assert.equal(seen?.url.pathname, '/searx/search');
    assert.equal(seen?.url.searchParams.get('q'), 'agent frameworks');
    assert.equal(seen?.url.searchParams.get('format'), 'json');
  });

  test('403 (json format disabled) tells the operator to enable search.formats json', async () => {
    server.handle((_req, res) => {
      res.writeHead(403, { 'Content-Type': 'text/html' });
      res.end('<html><body>403 Forbidden</body></html>');
    });
    const error = await rejectsWith(search({ query: 'x' }, searxng()), 'EXECUTION_FAILED');
    assert.match(error.message, /HTTP 403/);
    assert.match(error.message, /search\.formats/);
    assert.match(error.message, /json/);
    assert.equal(error.recoverable, false);
  });

  test('429 is RATE_LIMITED, recoverable, and names the Retry-After delay', async () => {
    server.handle((_req, res) => {
      res.writeHead(429, { 'Retry-After': '42', 'Content-Type': 'text/plain' });
      res.end('Too Many Requests');
    });
    const error = await rejectsWith(search({ query: 'x' }, searxng()), 'RATE_LIMITED');
    assert.equal(error.recoverable, true);
    assert.match(error.message, /retry after 42 s/);
  });

  test('5xx is a recoverable EXECUTION_FAILED with the provider status', async () => {
    server.handle((_req, res) => {
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end('bad gateway');
    });
    const error = await rejectsWith(search({ query: 'x' }, searxng()), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, true);
    assert.match(error.message, /SearXNG answered HTTP 502/);
  });

  test('a body that is not JSON is reported, not crashed on', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!DOCTYPE html><html>results page</html>');
    });
    const error = await rejectsWith(search({ query: 'x' }, searxng()), 'EXECUTION_FAILED');
    assert.match(error.message, /not JSON/);
  });

  test('an answer slower than timeout_ms is aborted with a recoverable TIMEOUT', async () => {
    server.handle((_req, res) => {
      const timer = setTimeout(() => sendJson(res, 200, { results: [] }), 5_000);
      res.on('close', () => clearTimeout(timer));
    });
    const error = await rejectsWith(
      search({ query: 'x' }, { ...searxng(), timeout_ms: 150 }),
      'TIMEOUT',
    );
    assert.equal(error.recoverable, true);
    assert.match(error.message, /did not answer within 150 ms/);
  });

  test('aborting the call signal stops the request with the signal reason', async () => {
    server.handle(() => {
      // never answers; the abort must end the call
    });
    const { ctx, controller } = makeContext(searxng());
    const pending = searchWeb.handler({ query: 'x' }, ctx) as Promise<unknown>;
    const reason = new Error('call timed out');
    setImmediate(() => controller.abort(reason));
    await assert.rejects(pending, (e) => e === reason);
  });

  test('a closed port is a recoverable EXECUTION_FAILED saying the host cannot be reached', async () => {
    const port = await freePort();
    const error = await rejectsWith(
      search({ query: 'x' }, { provider: 'searxng', url: `http://127.0.0.1:${port}` }),
      'EXECUTION_FAILED',
    );
    assert.equal(error.recoverable, true);
    assert.match(
      error.message,
      /could not reach SearXNG at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED/,
    );
  });

  test('without tools.search_web.url the error says what to configure', async () => {
    const error = await rejectsWith(
      search({ query: 'x' }, { provider: 'searxng' }),
      'EXECUTION_FAILED',
    );
    assert.match(error.message, /tools\.search_web\.url/);
  });
});

describe('Brave provider', () => {
  const brave = () => ({
    provider: 'brave',
    url: `${server.origin}/res/v1`,
    api_key_env: 'VAULTD_TEST_BRAVE_KEY',
  });
  const braveError = (status: number, code: string, detail: string) => ({
    type: 'ErrorResponse',
    error: {
      id: '5d832250-9396-4f6e-b84a-2a1fe524cd7d',
      status,
      code,
      detail,
      meta: { component: 'api' },
    },
    time: 1663072993,
  });

  test('sends the key from the named env variable and reads web.results', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'test-token-123';
    server.handle((req, res) => {
      if (req.headers['x-subscription-token'] !== 'test-token-123') {
        sendJson(
          res,
          422,
          braveError(
            422,
            'SUBSCRIPTION_TOKEN_INVALID',
            'The provided subscription token is invalid.',
          ),
        );
        return;
      }
      sendJson(res, 200, {
        type: 'search',
        query: { original: req.url.searchParams.get('q') },
        mixed: { type: 'mixed', main: [] },
        web: {
          type: 'search',
          results: [
            {
              title: 'Brave <strong>one</strong>',
              url: 'https://one.example/',
              description: 'The <strong>first</strong> hit.',
              is_source_local: false,
              language: 'en',
              family_friendly: true,
            },
            { title: 'Two', url: 'https://two.example/page', description: 'Second &amp; last.' },
          ],
        },
      });
    });
    const out = await search({ query: 'agents', num_results: 5 }, brave());
    assert.deepEqual(out.results, [
      { title: 'Brave one', url: 'https://one.example/', snippet: 'The first hit.' },
      { title: 'Two', url: 'https://two.example/page', snippet: 'Second & last.' },
    ]);
    const seen = server.requests[0];
    assert.equal(seen?.url.pathname, '/res/v1/web/search');
    assert.equal(seen?.url.searchParams.get('q'), 'agents');
    assert.equal(seen?.url.searchParams.get('count'), '5');
    assert.equal(seen?.headers['accept'], 'application/json');
  });

  test('a response without a web section means no hits', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'k';
    server.handle((_req, res) =>
      sendJson(res, 200, { type: 'search', query: { original: 'zzzz' } }),
    );
    assert.deepEqual(await search({ query: 'zzzz' }, brave()), { results: [] });
  });

  test('a missing key fails before any request, naming the variable', async () => {
    const error = await rejectsWith(search({ query: 'x' }, brave()), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, false);
    assert.match(error.message, /VAULTD_TEST_BRAVE_KEY/);
    assert.equal(server.requests.length, 0);
  });

  test('the default key variable is BRAVE_API_KEY', async () => {
    const saved = process.env['BRAVE_API_KEY'];
    delete process.env['BRAVE_API_KEY'];
    try {
      const error = await rejectsWith(
        search({ query: 'x' }, { provider: 'brave', url: server.origin }),
        'EXECUTION_FAILED',
      );
      assert.match(error.message, /BRAVE_API_KEY/);
    } finally {
      if (saved !== undefined) process.env['BRAVE_API_KEY'] = saved;
    }
  });

  test('an invalid key (422 SUBSCRIPTION_TOKEN_INVALID) is not recoverable and says to check the key', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'wrong';
    server.handle((_req, res) =>
      sendJson(
        res,
        422,
        braveError(
          422,
          'SUBSCRIPTION_TOKEN_INVALID',
          'The provided subscription token is invalid.',
        ),
      ),
    );
    const error = await rejectsWith(search({ query: 'x' }, brave()), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, false);
    assert.match(error.message, /HTTP 422/);
    assert.match(
      error.message,
      /SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid\./,
    );
    assert.match(error.message, /VAULTD_TEST_BRAVE_KEY/);
    assert.doesNotMatch(error.message, /wrong/, 'the key itself is never echoed');
  });

  test('401 with the errors-list shape is read too', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'k';
    server.handle((_req, res) =>
      sendJson(res, 401, {
        type: 'ErrorResponse',
        errors: [
          {
            id: 'x',
            code: 'SUBSCRIPTION_TOKEN_MISSING',
            detail: 'No subscription token.',
            status: 401,
            meta: {},
          },
        ],
        time: 1663072993,
      }),
    );
    const error = await rejectsWith(search({ query: 'x' }, brave()), 'EXECUTION_FAILED');
    assert.match(error.message, /SUBSCRIPTION_TOKEN_MISSING: No subscription token\./);
    assert.equal(error.recoverable, false);
  });

  test('429 RATE_LIMITED is recoverable and reads X-RateLimit-Reset when Retry-After is absent', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'k';
    server.handle((_req, res) =>
      sendJson(res, 429, braveError(429, 'RATE_LIMITED', 'Request rate limit exceeded for plan.'), {
        'X-RateLimit-Limit': '1, 15000',
        'X-RateLimit-Remaining': '0, 14000',
        'X-RateLimit-Reset': '1, 1419704',
      }),
    );
    const error = await rejectsWith(search({ query: 'x' }, brave()), 'RATE_LIMITED');
    assert.equal(error.recoverable, true);
    assert.match(error.message, /Request rate limit exceeded for plan/);
    assert.match(error.message, /retry after 1 s/);
  });

  test('429 QUOTA_LIMITED is RATE_LIMITED but not recoverable', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'k';
    server.handle((_req, res) =>
      sendJson(
        res,
        429,
        braveError(429, 'QUOTA_LIMITED', 'Request quota limit exceeded for plan.'),
        { 'Retry-After': '3600' },
      ),
    );
    const error = await rejectsWith(search({ query: 'x' }, brave()), 'RATE_LIMITED');
    assert.equal(error.recoverable, false);
    assert.match(error.message, /quota/);
  });

  test('422 VALIDATION names the detail and is not recoverable', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'k';
    server.handle((_req, res) =>
      sendJson(res, 422, braveError(422, 'VALIDATION', 'Unable to validate request parameter(s)')),
    );
    const error = await rejectsWith(search({ query: 'x' }, brave()), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, false);
    assert.match(error.message, /VALIDATION: Unable to validate request parameter\(s\)/);
  });

  test('500 is recoverable', async () => {
    process.env['VAULTD_TEST_BRAVE_KEY'] = 'k';
    server.handle((_req, res) => {
      res.writeHead(500);
      res.end();
    });
    const error = await rejectsWith(search({ query: 'x' }, brave()), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, true);
    assert.match(error.message, /Brave Search answered HTTP 500/);
  });
});

describe('Tavily provider', () => {
  const tavily = () => ({
    provider: 'tavily',
    url: server.origin,
    api_key_env: 'VAULTD_TEST_TAVILY_KEY',
  });

  test('POSTs the query as JSON with a bearer key and reads results', async () => {
    process.env['VAULTD_TEST_TAVILY_KEY'] = 'tvly-test';
    server.handle((req, res) => {
      if (req.headers['authorization'] !== 'Bearer tvly-test') {
        sendJson(res, 401, { detail: { error: 'Unauthorized: missing or invalid API key.' } });
        return;
      }
      sendJson(res, 200, {
        query: 'q',
        results: [{ title: 'T', url: 'https://t.example/', content: 'c <b>d</b>', score: 0.9 }],
        response_time: 0.5,
      });
    });
    const out = await search({ query: 'q', num_results: 3 }, tavily());
    assert.deepEqual(out.results, [{ title: 'T', url: 'https://t.example/', snippet: 'c d' }]);
    const seen = server.requests[0];
    assert.equal(seen?.method, 'POST');
    assert.deepEqual(JSON.parse(seen?.body ?? ''), {
      query: 'q',
      max_results: 3,
      search_depth: 'basic',
    });
  });

  test('401 says to check the key variable', async () => {
    process.env['VAULTD_TEST_TAVILY_KEY'] = 'bad';
    server.handle((_req, res) =>
      sendJson(res, 401, { detail: { error: 'Unauthorized: missing or invalid API key.' } }),
    );
    const error = await rejectsWith(search({ query: 'q' }, tavily()), 'EXECUTION_FAILED');
    assert.match(error.message, /Unauthorized: missing or invalid API key\./);
    assert.match(error.message, /VAULTD_TEST_TAVILY_KEY/);
  });
});

describe('DuckDuckGo provider (key-less default)', () => {
  const ddg = () => ({ url: `${server.origin}/html/` });

  test('is the default and scrapes the HTML page into cleaned, de-duplicated hits', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8' });
      res.end(fixture('duckduckgo-results.html'));
    });
    const out = await search({ query: 'agent frameworks' }, ddg());
    assert.deepEqual(
      out.results.map((r) => r.url),
      [
        'https://www.example.org/agents?section=intro&lang=en',
        'https://docs.example.com/guide/',
        'https://plain.example.net/page',
      ],
    );
    assert.equal(out.results[0]?.title, 'Agent Frameworks & Tools — An Overview');
    const seen = server.requests[0];
    assert.equal(seen?.url.pathname, '/html/');
    assert.equal(seen?.url.searchParams.get('q'), 'agent frameworks');
    assert.match(String(seen?.headers['user-agent']), /vaultd/);
  });

  test('provider: default is DuckDuckGo', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(fixture('duckduckgo-results.html'));
    });
    const out = await search({ query: 'q', num_results: 1 }, { ...ddg(), provider: 'default' });
    assert.equal(out.results.length, 1);
    assert.equal(server.requests[0]?.url.pathname, '/html/');
  });

  test('the config schema accepts the documented shapes and rejects mistakes', () => {
    const validate = sharedAjv().compile(searchWeb.configSchema ?? {});
    for (const good of [
      {},
      { provider: 'default' },
      { provider: 'searxng', url: 'http://127.0.0.1:8888' },
      { provider: 'brave', api_key_env: 'BRAVE_API_KEY', timeout_ms: 10_000 },
      { provider: 'tavily', rate_limit: { max: 30, window_ms: 60_000 } },
    ]) {
      assert.equal(
        validate(good),
        true,
        `${JSON.stringify(good)}: ${sharedAjv().errorsText(validate.errors)}`,
      );
    }
    for (const bad of [
      { provider: 'google' },
      { provider: 'searxng' },
      { url: 'ftp://x' },
      { api_key_env: 'has space' },
      { providr: 'brave' },
    ]) {
      assert.equal(validate(bad), false, JSON.stringify(bad));
    }
  });

  test('a "No results" page is an empty list', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(fixture('duckduckgo-no-results.html'));
    });
    assert.deepEqual(await search({ query: 'qwxzv' }, ddg()), { results: [] });
  });

  test('a 202 bot check is RATE_LIMITED with a clear message', async () => {
    server.handle((_req, res) => {
      res.writeHead(202, { 'Content-Type': 'text/html' });
      res.end(fixture('duckduckgo-bot-check.html'));
    });
    const error = await rejectsWith(search({ query: 'x' }, ddg()), 'RATE_LIMITED');
    assert.equal(error.recoverable, true);
    assert.match(error.message, /bot check/);
    assert.match(error.message, /searxng|SearXNG/);
  });

  test('a 200 page without recognisable results says the markup may have changed', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<html><body><div class="serp">new layout</div></body></html>');
    });
    const error = await rejectsWith(search({ query: 'x' }, ddg()), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, false);
    assert.match(error.message, /HTML may have changed/);
  });
});

test('a blank query is INVALID_PARAMS', async () => {
  await rejectsWith(search({ query: '   ' }, {}), 'INVALID_PARAMS');
});
