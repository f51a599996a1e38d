import { definePack } from '../../protocol/pack.ts';
import { searchWebConfigSchema } from './config.ts';
import { searchWeb } from './index.ts';

/** The `web` pack: `search_web` through the configured provider (config `tools.web`). */
export const webPack = definePack({
  name: 'web',
  description: 'search the web through a configured provider (DuckDuckGo, SearXNG, Brave, Tavily)',
  tools: [searchWeb as never],
  configSchema: searchWebConfigSchema,
  legacyConfigKey: 'search_web',
});
