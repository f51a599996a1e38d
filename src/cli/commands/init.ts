import { existsSync, readdirSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { CONFIG_DEFAULTS, loadConfig, sampleConfigText } from '../../config/index.ts';
import type { Config } from '../../config/types.ts';
import { ensureLayout, resolveLayout, writeInVault } from '../../vault/index.ts';
import { EXIT } from '../exit-codes.ts';
import { builtinRegistry, loadSetup } from '../setup.ts';
import { renderToolsMarkdown } from '../tools-md.ts';
import { UsageError } from '../usage-error.ts';
import { isVault } from '../vault-check.ts';

/**
 * `vaultd init [DIR]` / `vaultd init --config FILE`: the only command that makes a folder a
 * vault. It creates the missing folders, writes a commented `vaultd.yaml` (kept if present; none
 * with `--config`, whose file names the vault) and a `TOOLS.md` for agents listing the tools of
 * that config (its plugins and packs, the vault's own `vaultd.yaml` when it has one), and prints
 * every path it wrote; run again, it rewrites `TOOLS.md`. Without DIR the current folder is used only when it is empty or already a vault.
 * @param dir the vault folder, if given.
 * @param options `config`: set up the vault this config file names instead.
 */
export async function runInit(
  dir: string | undefined,
  options: { config?: string } = {},
): Promise<number> {
  if (options.config !== undefined) {
    if (dir !== undefined) throw new UsageError('init takes a folder or --config FILE, not both');
    const setup = await loadSetup({ config: options.config }, { requireVault: false });
    const created = await createFolders(setup.config);
    const toolsPath = join(setup.config.vault, 'TOOLS.md');
    await writeToolsMd(
      setup.config.vault,
      toolsPath,
      renderToolsMarkdown(setup.registry.list(), setup.config),
    );
    report(setup.config.vault, created, [toolsPath], [], resolve(options.config));
    return EXIT.ok;
  }
  const root = resolve(dir ?? '.');
  if (existsSync(root) && !statSync(root).isDirectory())
    throw new UsageError(`${root} is not a folder: name the folder to make a vault of`);
  const configPath = join(root, 'vaultd.yaml');
  if (dir === undefined && !isVault(root, CONFIG_DEFAULTS.folders.inbox)) {
    if (readdirSync(root).length > 0)
      throw new UsageError(
        `the current folder ${root} is neither empty nor a vault: name the folder, e.g. vaultd init ~/vault (or vaultd init . to make this folder one)`,
      );
  }
  // An existing vaultd.yaml may rename the folders, load plugins and turn packs on or off: its
  // folder names are the ones to create, and its tools the ones TOOLS.md lists (as with --config).
  const own = existsSync(configPath);
  const { config, registry } = own
    ? await loadSetup({ config: configPath, vault: root }, { requireVault: false })
    : { config: loadConfig({ vault: root }), registry: builtinRegistry() };
  const created = await createFolders(config);
  const wrote: string[] = [];
  const kept: string[] = [];
  if (own) kept.push(configPath);
  else {
    await writeFile(configPath, sampleConfigText('.'), { flag: 'wx' });
    wrote.push(configPath);
  }
  const toolsPath = join(root, 'TOOLS.md');
  await writeToolsMd(root, toolsPath, renderToolsMarkdown(registry.list(), config));
  wrote.push(toolsPath);
  report(root, created, wrote, kept, configPath);
  return EXIT.ok;
}

// TOOLS.md sits where agents may write: replaced by a rename like every file vaultd writes in the
// vault, so a link an agent put at its name is replaced, never written through (it pointed
// vaultd init at a file outside the vault).
function writeToolsMd(vault: string, path: string, text: string): Promise<void> {
  return writeInVault(vault, path, text);
}

async function createFolders(config: Config): Promise<string[]> {
  const layout = resolveLayout(config);
  const missing = (Object.values(layout) as string[]).filter((p) => !existsSync(p));
  await ensureLayout(layout);
  return missing;
}

function report(
  root: string,
  created: readonly string[],
  wrote: readonly string[],
  kept: readonly string[],
  configPath: string,
): void {
  const lines = [`vault ready at ${root}`];
  for (const c of created) lines.push(`  created ${c}/`);
  for (const w of wrote) lines.push(`  wrote ${w}`);
  for (const k of kept) lines.push(`  kept ${k} (already there)`);
  lines.push(`start it with: vaultd run --config ${configPath}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
