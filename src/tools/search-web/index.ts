import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { ToolContext, ToolDefinition } from '../../protocol/types.ts';
import { cleanText } from './clean-text.ts';
import { readSearchConfig, searchWebConfigSchema } from './config.ts';
import { dedupeResults } from './dedupe.ts';
import { searchBrave } from './providers/brave.ts';
import { searchDuckDuckGo } from './providers/duckduckgo.ts';
import { searchSearxng } from './providers/searxng.ts';
import { searchTavily } from './providers/tavily.ts';
import type { ProviderName, SearchOutput, SearchProvider, SearchResult } from './types.ts';

/** Arguments of `search_web`. */
export interface SearchWebArgs {
  readonly query: string;
  /** 1–20; the schema fills in 5. */
  readonly num_results?: number;
}

/** Default number of hits. */
export const DEFAULT_NUM_RESULTS = 5;

const PROVIDERS: Readonly<Record<ProviderName, SearchProvider>> = {
  duckduckgo: searchDuckDuckGo,
  searxng: searchSearxng,
  brave: searchBrave,
  tavily: searchTavily,
};

/**
 * Run a web search with the configured provider and tidy the hits: HTML cleaned from titles and
 * snippets, only http(s) links, de-duplicated by URL, at most `num_results`.
 * @param args the query and how many hits to return (default 5).
 * @param ctx the call context: signal, logger and the `tools.search_web` config.
 */
export async function runSearchWeb(args: SearchWebArgs, ctx: ToolContext): Promise<SearchOutput> {
  const config = readSearchConfig(ctx.config);
  const count = args.num_results ?? DEFAULT_NUM_RESULTS;
  const query = args.query.trim();
  if (query === '') {
    throw new ToolError('INVALID_PARAMS', 'query is blank: write the words to search for');
  }
  ctx.logger.debug({ provider: config.provider, count }, 'search_web: querying provider');
  const raw = await PROVIDERS[config.provider]({ query, count, config, signal: ctx.signal });
  const cleaned = raw.flatMap((hit): SearchResult[] => {
    if (!/^https?:\/\//i.test(hit.url)) return [];
    const title = cleanText(hit.title);
    return [
      { title: title === '' ? hit.url : title, url: hit.url, snippet: cleanText(hit.snippet) },
    ];
  });
  return { results: dedupeResults(cleaned).slice(0, count) };
}

/** The declaration of `search_web` (SPEC section 8). */
export const searchWebDefinition: ToolDefinition<SearchWebArgs> = {
  name: 'search_web',
  description:
    'Search the web and return the top hits as {results: [{title, url, snippet}]}. Use it to find ' +
    'current information, sources or documentation; follow up on a url with a fetch tool if one is ' +
    'available. Write the query as you would type it into a search engine.',
  parameters: {
    query: { type: 'string', minLength: 1, maxLength: 500, description: 'What to search for.' },
    num_results: {
      type: 'integer',
      minimum: 1,
      maximum: 20,
      default: DEFAULT_NUM_RESULTS,
      description: 'How many hits to return, 1 to 20.',
    },
  },
  required: ['query'],
  safety: 'safe',
  categories: ['web', 'search'],
  readOnly: true,
  idempotent: true,
  outputSchema: {
    type: 'object',
    properties: {
      results: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            title: { type: 'string' },
            url: { type: 'string' },
            snippet: { type: 'string' },
          },
          required: ['title', 'url', 'snippet'],
        },
      },
    },
    required: ['results'],
  },
  configSchema: searchWebConfigSchema,
  handler: runSearchWeb,
};

/** The `search_web` tool, ready to register. */
export const searchWeb = defineTool(searchWebDefinition);
