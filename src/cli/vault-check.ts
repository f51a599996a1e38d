import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../config/types.ts';
import { STATE_DIR_NAME } from '../vault/index.ts';
import { UsageError } from './usage-error.ts';
import { shellWord } from '../note/escape.ts';

/** Where a command found its config file, for messages: `--config`, `$VAULTD_CONFIG`, …. */
export interface ConfigSource {
  readonly file: string;
  readonly from: string;
}

/**
 * Whether a folder is a vault: it holds the inbox or vaultd's state folder. Only `vaultd init`
 * makes a folder one.
 * @param dir the folder.
 * @param inbox the inbox's folder name (`folders.inbox`).
 */
export function isVault(dir: string, inbox: string): boolean {
  return isDirectory(join(dir, inbox)) || isDirectory(join(dir, STATE_DIR_NAME));
}

/**
 * Refuse a vault path that is not a vault, in one line that names the path, where it came from
 * and the `vaultd init` command that makes it one (a mistyped `--vault` must not create a vault).
 * @param config the loaded config.
 * @param vaultOption the `--vault` given, if any.
 * @param source the config file and how it was found, if any.
 * @throws UsageError when `config.vault` is not a vault.
 */
export function assertVault(
  config: Pick<Config, 'vault' | 'folders'>,
  vaultOption: string | undefined,
  source: ConfigSource | undefined,
): void {
  if (isVault(config.vault, config.folders.inbox)) return;
  const origin =
    vaultOption !== undefined
      ? `given with --vault ${vaultOption}`
      : `named by 'vault' in ${source?.file ?? 'the config'}${source === undefined ? '' : ` (${source.from})`}`;
  const what = !existsSync(config.vault)
    ? 'does not exist'
    : isDirectory(config.vault)
      ? `has no ${config.folders.inbox}/ and no ${STATE_DIR_NAME}/`
      : 'is not a folder';
  const init =
    vaultOption === undefined && source !== undefined
      ? `vaultd init --config ${shellWord(source.file)}`
      : `vaultd init ${shellWord(config.vault)}`;
  throw new UsageError(
    `${config.vault} is not a vault: it ${what} (${origin}); check the path, or create the vault with: ${init}`,
  );
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The nearest folder above `dir` that holds a `.vaultd/` state folder (with `byConfig`, also one
 * that holds a `vaultd.yaml`): a config file found in `dir` lies inside that vault, where agents
 * may write, and is not loaded (a config loads code: plugins, MCP servers, command tools).
 * @param dir an absolute folder.
 * @param byConfig also take a folder holding a `vaultd.yaml` for a vault (default true).
 */
export function enclosingVault(dir: string, byConfig = true): string | undefined {
  for (let up = dirname(dir); up !== dir; dir = up, up = dirname(up)) {
    if ((byConfig && existsSync(join(up, 'vaultd.yaml'))) || isDirectory(join(up, STATE_DIR_NAME)))
      return up;
  }
  return undefined;
}
