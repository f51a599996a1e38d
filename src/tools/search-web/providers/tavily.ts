import { fetchText } from '../fetch-text.ts';
import { parseRetryAfter, statusError } from '../http-errors.ts';
import { readContentResults } from './content-results.ts';
import type { SearchProvider } from '../types.ts';
import { readApiKey } from './api-key.ts';

/** Tavily's API base; `tools.search_web.url` overrides it. */
export const TAVILY_URL = 'https://api.tavily.com';
/** The environment variable read for the key unless `tools.search_web.api_key_env` names another. */
export const TAVILY_KEY_ENV = 'TAVILY_API_KEY';

const NAME = 'Tavily';

/** Search through Tavily: `POST {url}/search` with a JSON body and a bearer key from the environment. */
export const searchTavily: SearchProvider = async ({ query, count, config, signal }) => {
  const keyEnv = config.apiKeyEnv ?? TAVILY_KEY_ENV;
  const key = readApiKey(NAME, keyEnv);
  const url = new URL(`${(config.url ?? TAVILY_URL).replace(/\/+$/, '')}/search`);
  const response = await fetchText({
    provider: NAME,
    url,
    signal,
    timeoutMs: config.timeoutMs,
    maxBytes: config.maxResponseBytes,
    init: {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${key}`,
        'Content-Type': 'application/json',
        Accept: 'application/json',
        'User-Agent': config.userAgent,
      },
      body: JSON.stringify({ query, max_results: Math.min(20, count), search_depth: 'basic' }),
    },
  });
  if (response.status < 200 || response.status >= 300) {
    throw statusError({
      provider: NAME,
      status: response.status,
      statusText: response.statusText,
      detail: readTavilyError(response.text),
      retryAfter: parseRetryAfter(response.headers.get('retry-after')),
      hint:
        response.status === 401
          ? `check the API key in the environment variable ${keyEnv}`
          : undefined,
    });
  }
  return readContentResults(NAME, response.text);
};

/** Tavily's errors read `{detail: {error: "…"}}` (sometimes `{detail: "…"}`). */
function readTavilyError(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { detail?: unknown };
    if (typeof body.detail === 'string') return body.detail;
    const inner = (body.detail as { error?: unknown } | undefined)?.error;
    return typeof inner === 'string' ? inner : undefined;
  } catch {
    return undefined;
  }
}
