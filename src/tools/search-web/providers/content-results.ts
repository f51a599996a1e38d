import { ToolError } from '../../../protocol/errors.ts';
import type { SearchResult } from '../types.ts';
import { parseJsonBody } from '../fetch-text.ts';

/**
 * Read the `{results: [{title, url, content}]}` answer that SearXNG and Tavily share.
 * @param name the provider, for messages.
 * @param text the response body.
 * @throws ToolError EXECUTION_FAILED when the body is not JSON with a results array.
 */
export function readContentResults(name: string, text: string): SearchResult[] {
  const body = parseJsonBody(name, text) as { results?: unknown };
  if (!Array.isArray(body.results)) {
    throw new ToolError('EXECUTION_FAILED', `${name} answered JSON without a results array`, {
      recoverable: false,
    });
  }
  return body.results.flatMap((item: unknown): SearchResult[] => {
    const hit = item as { title?: unknown; url?: unknown; content?: unknown };
    if (typeof hit.url !== 'string') return [];
    return [{ title: String(hit.title ?? ''), url: hit.url, snippet: String(hit.content ?? '') }];
  });
}
