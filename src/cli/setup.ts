import { loadConfig } from '../config/index.ts';
import type { Config } from '../config/types.ts';
import { ToolRegistry } from '../protocol/index.ts';
import { builtinTools } from '../tools/index.ts';
import { configFileOf, type CommonOptions } from './main.ts';
import { loadPlugins } from './plugins.ts';

/**
 * The registry of built-in tools and configured plugins, and the config loaded and checked.
 * @param options the command's `--vault` and `--config`.
 * @throws ConfigError for a bad config (exit code 2).
 */
export async function loadSetup(
  options: CommonOptions,
): Promise<{ config: Config; registry: ToolRegistry }> {
  const registry = builtinRegistry();
  const toolSchemas = Object.fromEntries(
    registry
      .list()
      .filter((tool) => tool.configSchema !== undefined)
      .map((tool) => [tool.name, tool.configSchema as Record<string, unknown>]),
  );
  const file = configFileOf(options);
  const config = loadConfig({
    ...(file === undefined ? {} : { file }),
    ...(options.vault === undefined ? {} : { vault: options.vault }),
    toolSchemas,
  });
  // Plugins are resolved by the loader against the config file's folder; their own config
  // sections are checked when they load.
  await loadPlugins(registry, config.plugins, process.cwd());
  return { config, registry };
}

/**
 * The registry of built-in tools only, for commands that need no vault.
 */
export function builtinRegistry(): ToolRegistry {
  const registry = new ToolRegistry();
  for (const tool of builtinTools()) registry.register(tool);
  return registry;
}
