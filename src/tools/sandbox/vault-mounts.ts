import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';
import type { PackContext } from '../../protocol/pack.ts';
import type { VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';

/** Where vaultd keeps what no sandboxed command may change. */
export interface VaultPaths {
  /** Real path of the vault. */
  readonly vault: string;
  /** Real path of vaultd's state folder (`.vaultd`), hidden from commands. */
  readonly state: string;
}

/** What a sandbox with a writable working directory mounts over it to protect vaultd. */
export interface VaultMounts {
  /** Folders replaced by an empty read-only tmpfs (vaultd's state). */
  readonly hide: readonly string[];
  /** Paths mounted read-only again (the vault's entries no tool may write). */
  readonly readOnly: readonly string[];
}

/**
 * The vault's and its state folder's real paths, for a pack.
 * @param ctx the pack's context (its `stateDir` is `<vault>/.vaultd/packs/<pack>`).
 */
export async function vaultPaths(
  ctx: Pick<PackContext, 'vault' | 'stateDir'>,
): Promise<VaultPaths> {
  const state = dirname(dirname(ctx.stateDir));
  return {
    vault: await realpath(ctx.vault),
    state: await realpath(state).catch(() => state),
  };
}

/**
 * The mounts that keep vaultd's files out of reach when a sandbox's writable working directory
 * holds the vault: its state folder hidden, and every entry at the vault's top level that a tool
 * may not write (`Done/`, `Approved/`, `.obsidian/`, `Dashboard.md`…, from the vault's protected
 * paths) read-only. Nothing when the working directory is inside the vault, not above it (the
 * state folder is then out of sight), unless `stateVisible`.
 * @param cwd the working directory (absolute, real).
 * @param files the tool's roots, which know the protected paths.
 * @param paths the vault and its state folder.
 * @param stateVisible the sandbox shows the whole file system (read-only): the state folder is
 *   hidden wherever the working directory is.
 */
export async function vaultMounts(
  cwd: string,
  files: VaultAccess,
  paths: VaultPaths,
  stateVisible = false,
): Promise<VaultMounts> {
  const hide: string[] = [];
  const readOnly: string[] = [];
  const holdsVault = isInside(paths.vault, cwd);
  if ((holdsVault || stateVisible) && (await exists(paths.state))) hide.push(paths.state);
  if (holdsVault) {
    for (const name of await readdir(paths.vault)) {
      const path = join(paths.vault, name);
      if (path === paths.state) continue;
      const info = await lstat(path).catch(() => undefined);
      if (info === undefined || info.isSymbolicLink()) continue;
      if (await refusedForWrite(files, path)) readOnly.push(await realpath(path));
    }
  }
  return { hide, readOnly };
}

/**
 * The bwrap arguments for {@link VaultMounts}; they come after the working directory's `--bind`.
 * @param mounts what to hide and keep read-only.
 */
export function vaultMountArgs(mounts: VaultMounts): string[] {
  return [
    ...mounts.hide.flatMap((p) => ['--tmpfs', p, '--remount-ro', p]),
    ...mounts.readOnly.flatMap((p) => ['--ro-bind', p, p]),
  ];
}

async function refusedForWrite(files: VaultAccess, path: string): Promise<boolean> {
  try {
    await files.resolve(path, 'write');
    return false;
  } catch (error) {
    return error instanceof ToolError && error.code === 'PERMISSION_DENIED';
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
