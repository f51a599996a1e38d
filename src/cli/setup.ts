import { loadConfig } from '../config/index.ts';
import { ConfigError } from '../config/config-error.ts';
import type { Config } from '../config/types.ts';
import type { ToolPack } from '../protocol/pack.ts';
import type { Tool } from '../protocol/types.ts';
import { ToolRegistry } from '../protocol/index.ts';
import { withPack } from '../protocol/define-tool.ts';
import { BUILTIN_PACKS } from '../tools/index.ts';
import { checkToolSections, optionalPackSections, packConfigSchemas } from '../tools/host.ts';
import { configSourceOf, type CommonOptions } from './main.ts';
import { UsageError } from './usage-error.ts';
import { assertVault } from './vault-check.ts';
import { loadPlugins } from './plugins.ts';

/** The config, every tool pack (built-in and plugins), and a registry of their static tools. */
export interface Setup {
  readonly config: Config;
  readonly packs: readonly ToolPack[];
  /** The tools the enabled packs declare statically (a daemon registers the running ones). */
  readonly registry: ToolRegistry;
}

/**
 * Load the config, the plugins it names, and check every `tools.<pack>` section against its
 * pack's schema (plugins' included), applying defaults.
 * @param options the command's `--vault` and `--config`.
 * @param check `requireVault` (default true): refuse a vault path that is not a vault yet.
 * @throws ConfigError for a bad config (exit code 2).
 * @throws UsageError when no config file and no vault are given or found, or the vault is not
 *   one (exit code 2).
 */
export async function loadSetup(
  options: CommonOptions,
  check: { requireVault?: boolean } = {},
): Promise<Setup> {
  const source = configSourceOf(options);
  if (source === undefined && options.vault === undefined) throw new UsageError(NO_CONFIG);
  const file = source?.file;
  const base = {
    ...(file === undefined ? {} : { file }),
    ...(options.vault === undefined ? {} : { vault: options.vault }),
  };
  // Plugins are named by the config and configured by it: a first load finds them, a second one
  // checks every section, theirs included.
  const first = loadConfig({
    ...base,
    toolSchemas: packConfigSchemas(BUILTIN_PACKS),
    optionalTools: optionalPackSections(BUILTIN_PACKS),
  });
  if (check.requireVault !== false) assertVault(first, options.vault, source);
  const plugins = await loadPlugins(first.plugins, process.cwd());
  const packs = [...BUILTIN_PACKS, ...plugins];
  const config =
    plugins.length === 0
      ? first
      : loadConfig({
          ...base,
          toolSchemas: packConfigSchemas(packs),
          optionalTools: optionalPackSections(packs),
        });
  const problems = checkToolSections(config, packs);
  if (problems.length > 0) throw new ConfigError(problems, file);
  return {
    config,
    packs,
    // Made when asked for (TOOLS.md): a pack's listing may fail on its section (a command whose
    // argv names an undeclared parameter), and commands that list nothing must not fail on it.
    get registry() {
      return staticRegistry(packs, config, file);
    },
  };
}

// Without a config file there is nothing to say is invalid: say what was looked for and how to
// give one.
const NO_CONFIG =
  'no config file and no vault found: pass --config FILE or --vault DIR, set $VAULTD_CONFIG, or run vaultd in a vault folder that has a vaultd.yaml (vaultd init DIR makes one)';

/**
 * The registry of built-in tools only, for commands that need no vault.
 */
export function builtinRegistry(): ToolRegistry {
  return staticRegistry(BUILTIN_PACKS, undefined);
}

function staticRegistry(
  packs: readonly ToolPack[],
  config: Config | undefined,
  file?: string,
): ToolRegistry {
  const registry = new ToolRegistry();
  for (const pack of packs) {
    const section =
      config?.tools[pack.name] ??
      (pack.legacyConfigKey === undefined ? undefined : config?.tools[pack.legacyConfigKey]);
    const enabled = section?.['enabled'] ?? pack.enabledByDefault !== false;
    if (enabled !== true) continue;
    let tools: readonly Tool[];
    try {
      tools =
        section !== undefined && pack.listedTools !== undefined
          ? pack.listedTools(section)
          : (pack.staticTools ?? []);
    } catch (error) {
      throw new ConfigError(
        [
          `config key 'tools.${pack.name}': ${error instanceof Error ? error.message : String(error)}`,
        ],
        file,
      );
    }
    for (const tool of tools) registry.register(withPack(tool, pack.name));
  }
  return registry;
}
