import { ToolError } from '../../../protocol/errors.ts';
import { fetchText } from '../fetch-text.ts';
import { parseRetryAfter, statusError } from '../http-errors.ts';
import { readContentResults } from './content-results.ts';
import type { SearchProvider } from '../types.ts';

const NAME = 'SearXNG';

/**
 * Search through a SearXNG instance's JSON API: `GET {url}/search?q=…&format=json`.
 * The instance must allow the JSON format (`search.formats: [html, json]` in its settings.yml);
 * otherwise it answers 403, reported with that hint.
 */
export const searchSearxng: SearchProvider = async ({ query, config, signal }) => {
  if (config.url === undefined) {
    throw new ToolError(
      'EXECUTION_FAILED',
      'provider searxng needs the base URL of the instance in tools.search_web.url, e.g. http://127.0.0.1:8888',
      { recoverable: false },
    );
  }
  const url = new URL(`${config.url.replace(/\/+$/, '')}/search`);
  url.searchParams.set('q', query);
  url.searchParams.set('format', 'json');
  const response = await fetchText({
    provider: NAME,
    url,
    signal,
    timeoutMs: config.timeoutMs,
    maxBytes: config.maxResponseBytes,
    init: { headers: { 'User-Agent': config.userAgent, Accept: 'application/json' } },
  });
  if (response.status < 200 || response.status >= 300) {
    throw statusError({
      provider: NAME,
      status: response.status,
      statusText: response.statusText,
      retryAfter: parseRetryAfter(response.headers.get('retry-after')),
      hint:
        response.status === 403
          ? 'the instance does not serve the JSON format: add json to search.formats in its settings.yml ' +
            '(search: formats: [html, json]) and restart it'
          : undefined,
    });
  }
  return readContentResults(NAME, response.text);
};
