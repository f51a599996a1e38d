import { readSearchConfig } from './config.ts';
import { BRAVE_KEY_ENV } from './providers/brave.ts';
import { TAVILY_KEY_ENV } from './providers/tavily.ts';
import type { ProviderName } from './types.ts';

// The providers that need an API key, and the variable each reads unless `api_key_env` names another.
const KEY_ENV_DEFAULTS: Partial<Record<ProviderName, string>> = {
  brave: BRAVE_KEY_ENV,
  tavily: TAVILY_KEY_ENV,
};

/** An API key variable that a keyed provider will read and that is not set. */
export interface MissingApiKey {
  readonly provider: ProviderName;
  /** The environment variable read for the key. */
  readonly variable: string;
  /** The config key naming it, when the config does (else the provider's default variable). */
  readonly key: string | undefined;
  /** One sentence for the log and `vaultd tools`/`check`. */
  readonly message: string;
}

/**
 * The API key a keyed provider (Brave, Tavily) reads at each call, when its environment variable
 * is unset or empty now: every search fails until it is set, so the daemon warns at start. Not
 * fatal: the key is read per call, not at start.
 * @param section the `tools.search_web` section (defaults applied).
 * @param env the environment; `process.env` by default (what the providers read).
 * @returns undefined when the provider needs no key or its variable is set.
 */
export function findMissingApiKey(
  section: Readonly<Record<string, unknown>>,
  env: NodeJS.ProcessEnv = process.env,
): MissingApiKey | undefined {
  const config = readSearchConfig(section);
  const fallback = KEY_ENV_DEFAULTS[config.provider];
  if (fallback === undefined) return undefined;
  const variable = config.apiKeyEnv ?? fallback;
  if ((env[variable]?.trim() ?? '') !== '') return undefined;
  const key = config.apiKeyEnv === undefined ? undefined : 'tools.search_web.api_key_env';
  const named =
    key === undefined
      ? `the environment variable ${variable} (its default; tools.search_web.api_key_env names another)`
      : `the environment variable ${variable} (named by ${key})`;
  return {
    provider: config.provider,
    variable,
    key,
    message: `search_web: provider '${config.provider}' reads its API key from ${named}, which is not set for vaultd: every search_web call fails until it is`,
  };
}
