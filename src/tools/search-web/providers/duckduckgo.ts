import { ToolError } from '../../../protocol/errors.ts';
import { cleanText, decodeEntities } from '../clean-text.ts';
import { fetchText } from '../fetch-text.ts';
import { statusError } from '../http-errors.ts';
import type { SearchProvider, SearchResult } from '../types.ts';

/** DuckDuckGo's HTML-only results page; `tools.search_web.url` overrides it. */
export const DUCKDUCKGO_URL = 'https://html.duckduckgo.com/html/';

const NAME = 'DuckDuckGo';
const RESULT_LINK = /<a\b([^>]*\bclass="[^"]*\bresult__a\b[^"]*"[^>]*)>([\s\S]*?)<\/a\s*>/gi;
const SNIPPET =
  /<(a|div|td|span)\b[^>]*\bclass="[^"]*\bresult__snippet\b[^"]*"[^>]*>([\s\S]*?)<\/\1\s*>/i;
const BOT_CHECK = /anomaly-modal|challenge-form|\bg-recaptcha\b|cf-challenge/i;

/**
 * Search through DuckDuckGo's key-less HTML endpoint and scrape the hits from the page.
 * Scraping depends on the page's markup, which DuckDuckGo may change at any time, and automated
 * queries may be answered with a bot check (HTTP 202 or 403), reported as RATE_LIMITED.
 */
export const searchDuckDuckGo: SearchProvider = async ({ query, config, signal }) => {
  const url = new URL(config.url ?? DUCKDUCKGO_URL);
  url.searchParams.set('q', query);
  const response = await fetchText({
    provider: NAME,
    url,
    signal,
    timeoutMs: config.timeoutMs,
    init: { headers: { 'User-Agent': config.userAgent, Accept: 'text/html' } },
  });
  if (response.status === 202 || response.status === 403 || BOT_CHECK.test(response.text)) {
    throw new ToolError(
      'RATE_LIMITED',
      `${NAME} answered HTTP ${response.status} with a bot check instead of results: it limits automated ` +
        'queries from this address. Try again in a few minutes, or configure a SearXNG instance or a ' +
        'keyed provider (tools.search_web.provider)',
      { recoverable: true, data: { provider: NAME, status: response.status } },
    );
  }
  if (response.status < 200 || response.status >= 300) {
    throw statusError({ provider: NAME, status: response.status, statusText: response.statusText });
  }
  const results = parseDuckDuckGoHtml(response.text);
  if (results.length === 0 && !/\bno-results\b|No results/i.test(response.text)) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${NAME} answered a page without recognisable results: its HTML may have changed. ` +
        'Configure another provider (tools.search_web.provider: searxng or brave) until vaultd is updated',
      { recoverable: false, data: { provider: NAME, status: response.status } },
    );
  }
  return results;
};

/**
 * Read the organic hits out of a DuckDuckGo HTML results page (ads are skipped).
 * @param html the page.
 * @returns hits in page order, titles and snippets cleaned, redirect links decoded.
 */
export function parseDuckDuckGoHtml(html: string): SearchResult[] {
  const links = [...html.matchAll(RESULT_LINK)];
  const results: SearchResult[] = [];
  links.forEach((match, index) => {
    const href = /\bhref\s*=\s*"([^"]*)"/i.exec(match[1] ?? '')?.[1];
    const url = href === undefined ? undefined : decodeResultUrl(href);
    if (url === undefined) return;
    const end = (match.index ?? 0) + match[0].length;
    const next = links[index + 1]?.index ?? html.length;
    const snippet = SNIPPET.exec(html.slice(end, next))?.[2] ?? '';
    results.push({ title: cleanText(match[2] ?? ''), url, snippet: cleanText(snippet) });
  });
  return results;
}

/**
 * The target of a result link: DuckDuckGo wraps it as `//duckduckgo.com/l/?uddg=<encoded>&rut=…`.
 * @param href the `href` attribute as written in the page (entities not yet decoded).
 * @returns an http(s) URL, or undefined for ads, internal links and other schemes.
 */
export function decodeResultUrl(href: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(decodeEntities(href.trim()), 'https://duckduckgo.com/');
  } catch {
    return undefined;
  }
  const internal = /(^|\.)duckduckgo\.com$/i.test(parsed.hostname);
  if (internal) {
    const target = parsed.pathname.startsWith('/l/') ? parsed.searchParams.get('uddg') : null;
    if (target === null) return undefined;
    return decodeResultUrl(target);
  }
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined;
}
