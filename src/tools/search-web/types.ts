/** One search hit as the tool returns it. */
export interface SearchResult {
  readonly title: string;
  readonly url: string;
  readonly snippet: string;
}

/** What `search_web` returns as structured data. */
export interface SearchOutput {
  readonly results: SearchResult[];
}

/** Names of the supported providers. */
export type ProviderName = 'duckduckgo' | 'searxng' | 'brave' | 'tavily';

/** The `tools.search_web` config section, normalised with its defaults. */
export interface SearchConfig {
  readonly provider: ProviderName;
  /** Base URL of the provider's endpoint (see each provider for its default). */
  readonly url: string | undefined;
  /** Name of the environment variable holding the API key (keyed providers only). */
  readonly apiKeyEnv: string | undefined;
  /** How long one request to the provider may take. */
  readonly timeoutMs: number;
  /** The most bytes of a provider's answer read. */
  readonly maxResponseBytes: number;
  readonly userAgent: string;
}

/** What a provider gets for one query. */
export interface ProviderRequest {
  readonly query: string;
  readonly count: number;
  readonly config: SearchConfig;
  readonly signal: AbortSignal;
}

/** A search backend: returns raw hits (cleaning, de-duplication and truncation happen after). */
export type SearchProvider = (request: ProviderRequest) => Promise<SearchResult[]>;
