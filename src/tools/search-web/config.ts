import type { JsonSchema } from '../../protocol/types.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from './fetch-text.ts';
import type { ProviderName, SearchConfig } from './types.ts';

/** The providers `tools.search_web.provider` accepts. */
export const PROVIDERS: readonly ProviderName[] = ['duckduckgo', 'searxng', 'brave', 'tavily'];

/** Default time one provider request may take. */
export const DEFAULT_TIMEOUT_MS = 15_000;

/** Default User-Agent sent to providers. */
export const DEFAULT_USER_AGENT = 'vaultd/0.1 (search_web tool)';

/** Schema of `tools.<name>.rate_limit`, the per-tool override the daemon reads. */
export const RATE_LIMIT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    max: { type: 'integer', minimum: 1 },
    window_ms: { type: 'integer', minimum: 1 },
  },
  required: ['max', 'window_ms'],
  additionalProperties: false,
};

/** JSON Schema of the `tools.search_web` config section; `provider: default` means DuckDuckGo. */
export const searchWebConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    provider: { enum: ['default', ...PROVIDERS] },
    url: { type: 'string', pattern: '^https?://' },
    api_key_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
    timeout_ms: { type: 'integer', minimum: 100, maximum: 600_000 },
    max_response_bytes: { type: 'integer', minimum: 1024, maximum: 256 * 1024 * 1024 },
    user_agent: { type: 'string', minLength: 1 },
    // Keys the daemon reads for every tool.
    rate_limit: RATE_LIMIT_SCHEMA,
    enabled: {},
  },
  if: { properties: { provider: { const: 'searxng' } }, required: ['provider'] },
  then: { required: ['url'] },
  additionalProperties: false,
};

/**
 * Normalise the `tools.search_web` section, filling defaults; values of the wrong type fall back
 * to the defaults (the config loader has already reported them against the schema).
 * @param section the section as in `ctx.config`; `{}` (or `provider: default`) gives DuckDuckGo
 *   with a 15 s timeout.
 */
export function readSearchConfig(section: Readonly<Record<string, unknown>>): SearchConfig {
  const provider = PROVIDERS.find((name) => name === section['provider']) ?? 'duckduckgo';
  const url =
    typeof section['url'] === 'string' && section['url'] !== '' ? section['url'] : undefined;
  const apiKeyEnv = typeof section['api_key_env'] === 'string' ? section['api_key_env'] : undefined;
  const timeout = section['timeout_ms'];
  const userAgent = section['user_agent'];
  const maxBytes = section['max_response_bytes'];
  return {
    provider,
    url,
    apiKeyEnv,
    timeoutMs: typeof timeout === 'number' && timeout > 0 ? timeout : DEFAULT_TIMEOUT_MS,
    userAgent: typeof userAgent === 'string' && userAgent !== '' ? userAgent : DEFAULT_USER_AGENT,
    maxResponseBytes:
      typeof maxBytes === 'number' && maxBytes > 0 ? maxBytes : DEFAULT_MAX_RESPONSE_BYTES,
  };
}
