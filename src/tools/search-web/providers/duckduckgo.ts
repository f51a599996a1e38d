import { ToolError } from '../../../protocol/errors.ts';
import { cleanText, decodeEntities } from '../clean-text.ts';
import { fetchText } from '../fetch-text.ts';
import { statusError } from '../http-errors.ts';
import type { SearchProvider, SearchResult } from '../types.ts';

/** DuckDuckGo's HTML-only results page; `tools.search_web.url` overrides it. */
export const DUCKDUCKGO_URL = 'https://html.duckduckgo.com/html/';

const NAME = 'DuckDuckGo';
// A tag's attributes are looked for this far back from its class: a longer tag is not a result.
const MAX_TAG = 4096;
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
    maxBytes: config.maxResponseBytes,
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
 * Read the organic hits out of a DuckDuckGo HTML results page (ads are skipped). One forward pass
 * with bounded look-backs: linear in the page, whatever it holds.
 * @param html the page.
 * @returns hits in page order, titles and snippets cleaned, redirect links decoded.
 */
export function parseDuckDuckGoHtml(html: string): SearchResult[] {
  const lower = html.toLowerCase();
  const links = findElements(html, lower, 'result__a', ['a']);
  const results: SearchResult[] = [];
  links.forEach((link, index) => {
    const href = /\bhref\s*=\s*"([^"]*)"/i.exec(link.attributes)?.[1];
    const url = href === undefined ? undefined : decodeResultUrl(href);
    if (url === undefined) return;
    const next = links[index + 1]?.start ?? html.length;
    const [snippet] = findElements(
      html.slice(link.end, next),
      lower.slice(link.end, next),
      'result__snippet',
      ['a', 'div', 'td', 'span'],
    );
    results.push({ title: cleanText(link.inner), url, snippet: cleanText(snippet?.inner ?? '') });
  });
  return results;
}

interface Element {
  readonly start: number;
  readonly end: number;
  readonly attributes: string;
  readonly inner: string;
}

/**
 * The elements of the given tag names whose class attribute holds `className`, by indexOf from
 * left to right: each search starts after the previous element, and look-backs for the tag's
 * start are bounded, so the cost is linear in the text.
 */
function findElements(
  html: string,
  lower: string,
  className: string,
  tags: readonly string[],
): Element[] {
  const out: Element[] = [];
  let from = 0;
  let nextGt = -2; // the first `>` at or after the last hit looked at; -1 when none
  for (;;) {
    const at = lower.indexOf(className, from);
    if (at === -1) return out;
    from = at + className.length;
    const windowStart = Math.max(0, at - MAX_TAG);
    const window = lower.slice(windowStart, at);
    const lastLt = window.lastIndexOf('<');
    if (lastLt === -1 || window.lastIndexOf('>') > lastLt) continue;
    const open = windowStart + lastLt;
    const tag = /^<([a-z]+)\b/.exec(lower.slice(open, open + 12))?.[1];
    if (tag === undefined || !tags.includes(tag)) continue;
    // The first `>` after the hit, found once for all the hits before it: a page of
    // `<a result__a ` repeated with one `>` at its end made each hit scan to there (27 s at
    // 2 MiB).
    if (nextGt < at) nextGt = lower.indexOf('>', at);
    const gt = nextGt;
    if (gt === -1) return out;
    if (gt - open > MAX_TAG) continue;
    const attributes = html.slice(open + 1 + tag.length, gt);
    if (!new RegExp(`\\bclass\\s*=\\s*"[^"]*\\b${className}\\b`).test(attributes)) {
      from = gt + 1;
      continue;
    }
    const close = lower.indexOf(`</${tag}`, gt + 1);
    if (close === -1) return out;
    const closeEnd = lower.indexOf('>', close);
    const end = closeEnd === -1 ? html.length : closeEnd + 1;
    out.push({ start: open, end, attributes, inner: html.slice(gt + 1, close) });
    from = end;
  }
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
