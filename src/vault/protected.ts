import { realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { configFileOf } from '../config/load-config.ts';
import type { Config } from '../config/types.ts';
import { isInside } from './access.ts';
import type { VaultLayout } from './layout.ts';

/** The folder the service setup keeps vaultd's config and secrets in (docs/service.md). */
export const SYSTEM_CONFIG_DIR = '/etc/vaultd';

/** vaultd's own files outside its folders: what it was started with. */
export interface VaultdFiles {
  /** The config file it loaded (absolute). */
  readonly config?: string | undefined;
  /** The plugin modules it loaded (absolute). */
  readonly plugins?: readonly string[];
}

/**
 * The config file and plugins a loaded config names.
 * @param config a config from `loadConfig` (one made without a file names no config file).
 */
export function vaultdFilesOf(config: Config): VaultdFiles {
  return { config: configFileOf(config), plugins: config.plugins };
}

/**
 * What no tool may write and what no tool may read, for a vault and the config vaultd loaded
 * ({@link protectedForWrite}, {@link protectedForRead}), its config file looked up once.
 * @param layout the vault's folders.
 * @param config the loaded config.
 */
export function protectedPathsOf(
  layout: VaultLayout,
  config: Config,
): { write: string[]; read: string[] } {
  const own = vaultdFilesOf(config);
  const secrets = secretPaths(layout, own);
  return {
    write: [...ownFolders(layout), ...secrets, ...(own.plugins ?? [])],
    read: [layout.state, ...secrets],
  };
}

/**
 * vaultd's own folders and state, and the editor's: no tool writes there. The inbox is among them:
 * a tool that writes notes there would make calls that make calls, with no human in the loop
 * once a grant or a scratch folder covers it; agents write the inbox themselves. Git folders
 * (`.git` at any depth) are refused by the access itself, not listed here. With `own`, also
 * vaultd's config file, its folder when it is vaultd's own (below), and its plugin modules: a
 * tool that could change them would change vaultd's policy, or run code in it, at the next start.
 * @param layout the vault's folders.
 * @param own the config file and plugins vaultd was started with.
 * @returns absolute paths, folders or files.
 */
export function protectedForWrite(layout: VaultLayout, own: VaultdFiles = {}): string[] {
  return [...ownFolders(layout), ...secretPaths(layout, own), ...(own.plugins ?? [])];
}

function ownFolders(layout: VaultLayout): string[] {
  return [
    layout.state,
    layout.inbox,
    layout.inProgress,
    layout.pending,
    layout.approved,
    layout.rejected,
    layout.done,
    layout.failed,
    layout.logs,
    join(layout.root, '.obsidian'),
    join(layout.root, '.trash'),
    join(layout.root, 'Dashboard.md'),
  ];
}

/**
 * What no tool reads: vaultd's state (ledger, grants, approval requests), and with `own` its
 * config file (it may hold webhook URLs and tokens) and the folders its secrets live in.
 * @param layout the vault's folders.
 * @param own the config file vaultd was started with.
 * @returns absolute paths, folders or files.
 */
export function protectedForRead(layout: VaultLayout, own: VaultdFiles = {}): string[] {
  return [layout.state, ...secretPaths(layout, own)];
}

/**
 * The config file, `/etc/vaultd` (where the service keeps `vaultd.env`, whoever reads it), and the
 * config file's folder when it is a folder of vaultd's own: named `vaultd` (`/etc/vaultd`,
 * `~/.config/vaultd`, where `vaultd.env` sits beside it) and holding neither the vault nor being
 * inside it.
 */
function secretPaths(layout: VaultLayout, own: VaultdFiles): string[] {
  // A vault kept under /etc/vaultd (a test, an odd setup) keeps it reachable.
  const paths = isInside(layout.root, SYSTEM_CONFIG_DIR) ? [] : [SYSTEM_CONFIG_DIR];
  if (own.config !== undefined) {
    paths.push(own.config);
    // The folder as named and as it really is: a config reached through a link to its folder
    // (`etc-link/vaultd.yaml` → `vaultd/`) has its secrets beside the real file.
    let real = own.config;
    try {
      real = realpathSync(own.config);
    } catch {
      // Not there (a config made without a file on disk): the path as named.
    }
    for (const folder of new Set([dirname(own.config), dirname(real)])) {
      if (
        basename(folder) === 'vaultd' &&
        !isInside(layout.root, folder) &&
        !isInside(folder, layout.root) &&
        folder !== SYSTEM_CONFIG_DIR
      )
        paths.push(folder);
    }
  }
  return paths;
}
