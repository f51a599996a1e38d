import type { Logger } from 'pino';
import { definePack, type PackContext, type ToolPack } from '../../protocol/pack.ts';
import { searchWebConfigSchema } from './config.ts';
import { searchWeb } from './index.ts';
import { findMissingApiKey } from './key-check.ts';

const base = definePack({
  name: 'web',
  description: 'search the web through a configured provider (DuckDuckGo, SearXNG, Brave, Tavily)',
  tools: [searchWeb as never],
  configSchema: searchWebConfigSchema,
  legacyConfigKey: 'search_web',
});

/**
 * The `web` pack: `search_web` through the configured provider (config `tools.web`). At start
 * and at each reload it warns when a keyed provider's API key variable is not set.
 */
export const webPack: ToolPack = Object.freeze({
  ...base,
  start(ctx: PackContext) {
    warnMissingKey(ctx.config, ctx.logger);
    const tools = base.staticTools ?? [];
    return {
      tools: () => tools,
      // The tool reads its config at each call, so a new config applies at once.
      reload: async (config: Record<string, unknown>) => warnMissingKey(config, ctx.logger),
      stop: async () => undefined,
    };
  },
});

function warnMissingKey(section: Readonly<Record<string, unknown>>, logger: Logger): void {
  const missing = findMissingApiKey(section);
  if (missing === undefined) return;
  const fields = { provider: missing.provider, variable: missing.variable };
  logger.warn(
    missing.key === undefined ? fields : { ...fields, key: missing.key },
    missing.message,
  );
}
