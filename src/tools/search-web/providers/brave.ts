import { ToolError } from '../../../protocol/errors.ts';
import { fetchText, parseJsonBody } from '../fetch-text.ts';
import { parseRetryAfter, statusError } from '../http-errors.ts';
import type { SearchProvider, SearchResult } from '../types.ts';
import { readApiKey } from './api-key.ts';

/** Brave Search API base; `tools.search_web.url` overrides it (tests serve it from 127.0.0.1). */
export const BRAVE_URL = 'https://api.search.brave.com/res/v1';
/** The environment variable read for the key unless `tools.search_web.api_key_env` names another. */
export const BRAVE_KEY_ENV = 'BRAVE_API_KEY';

const NAME = 'Brave Search';

/**
 * Search through the Brave Search web API: `GET {url}/web/search?q=…&count=N` with the
 * subscription token from the environment in `X-Subscription-Token`.
 */
export const searchBrave: SearchProvider = async ({ query, count, config, signal }) => {
  const keyEnv = config.apiKeyEnv ?? BRAVE_KEY_ENV;
  const key = readApiKey(NAME, keyEnv);
  const url = new URL(`${(config.url ?? BRAVE_URL).replace(/\/+$/, '')}/web/search`);
  url.searchParams.set('q', query);
  url.searchParams.set('count', String(Math.min(20, count)));
  const response = await fetchText({
    provider: NAME,
    url,
    signal,
    timeoutMs: config.timeoutMs,
    maxBytes: config.maxResponseBytes,
    init: {
      headers: {
        Accept: 'application/json',
        'User-Agent': config.userAgent,
        'X-Subscription-Token': key,
      },
    },
  });
  if (response.status < 200 || response.status >= 300) {
    throw braveError(response.status, response.statusText, response.text, response.headers, keyEnv);
  }
  const body = parseJsonBody(NAME, response.text) as { web?: { results?: unknown } };
  const results = body.web?.results;
  // Brave leaves out the `web` section when nothing matched.
  if (results === undefined) return [];
  if (!Array.isArray(results)) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${NAME} answered JSON whose web.results is not an array`,
      {
        recoverable: false,
      },
    );
  }
  return results.flatMap((item: unknown): SearchResult[] => {
    const hit = item as { title?: unknown; url?: unknown; description?: unknown };
    if (typeof hit.url !== 'string') return [];
    return [
      { title: String(hit.title ?? ''), url: hit.url, snippet: String(hit.description ?? '') },
    ];
  });
};

interface BraveErrorDetail {
  readonly code?: string;
  readonly detail?: string;
}

/**
 * Read Brave's error body: `{type: "ErrorResponse", error: {code, detail, status, …}}`, or the
 * `errors: [...]` list form of the newer reference pages.
 */
function readBraveError(text: string): BraveErrorDetail {
  try {
    const body = JSON.parse(text) as { error?: unknown; errors?: unknown };
    const entry = (Array.isArray(body.errors) ? body.errors[0] : body.error) as
      { code?: unknown; detail?: unknown } | undefined;
    if (typeof entry !== 'object' || entry === null) return {};
    return {
      ...(typeof entry.code === 'string' ? { code: entry.code } : {}),
      ...(typeof entry.detail === 'string' ? { detail: entry.detail } : {}),
    };
  } catch {
    return {};
  }
}

function braveError(
  status: number,
  statusText: string,
  text: string,
  headers: Headers,
  keyEnv: string,
): ToolError {
  const { code, detail } = readBraveError(text);
  const said = [code, detail].filter(Boolean).join(': ') || undefined;
  const keyProblem =
    status === 401 ||
    status === 403 ||
    code === 'SUBSCRIPTION_TOKEN_INVALID' ||
    code === 'SUBSCRIPTION_NOT_FOUND';
  // X-RateLimit-Reset lists seconds per window, shortest first.
  const reset = headers.get('x-ratelimit-reset')?.split(',')[0]?.trim() ?? null;
  return statusError({
    provider: NAME,
    status,
    statusText,
    detail: said,
    retryAfter: parseRetryAfter(headers.get('retry-after')) ?? parseRetryAfter(reset),
    hint: keyProblem
      ? `Brave rejected the API key: check the subscription token in the environment variable ${keyEnv}`
      : code === 'QUOTA_LIMITED'
        ? "the plan's monthly quota is used up"
        : undefined,
    // A used-up monthly quota does not come back within a retry's backoff.
    recoverable: code === 'QUOTA_LIMITED' || (keyProblem && status !== 429) ? false : undefined,
  });
}
