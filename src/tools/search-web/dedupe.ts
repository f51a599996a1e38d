import type { SearchResult } from './types.ts';

const TRACKING_PARAM = /^(utm_[a-z]+|fbclid|gclid|mc_cid|mc_eid|ref_src)$/i;

/**
 * The key under which two URLs count as the same page: scheme-less, host lower-cased without
 * `www.`, default port, fragment, trailing slash and tracking parameters dropped, query sorted.
 * @param url an absolute URL; a string that does not parse is returned trimmed.
 */
export function normaliseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return url.trim();
  }
  const host = parsed.hostname.toLowerCase().replace(/^www\./, '');
  const port = parsed.port === '' ? '' : `:${parsed.port}`;
  let end = parsed.pathname.length;
  // A loop, not /\/+$/: a provider's path of many slashes took time growing with their square.
  while (end > 0 && parsed.pathname.charCodeAt(end - 1) === 47) end--;
  const path = parsed.pathname.slice(0, end) || '/';
  const params = [...parsed.searchParams.entries()]
    .filter(([name]) => !TRACKING_PARAM.test(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const query = params.length === 0 ? '' : `?${new URLSearchParams(params).toString()}`;
  return `${host}${port}${path}${query}`;
}

/**
 * Keep the first hit of every page, in order.
 * @param results hits, possibly naming a page twice (e.g. with and without `www.`).
 */
export function dedupeResults(results: readonly SearchResult[]): SearchResult[] {
  const seen = new Set<string>();
  return results.filter((result) => {
    const key = normaliseUrl(result.url);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
