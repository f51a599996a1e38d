import { mkdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Config } from '../config/types.ts';
import { toVaultIoError } from './fs-errors.ts';

/** Name of the daemon's state folder inside the vault (ledger, grants, lock). */
export const STATE_DIR_NAME = '.vaultd';

/** Absolute paths of the vault's folders. */
export interface VaultLayout {
  readonly root: string;
  readonly inbox: string;
  readonly inProgress: string;
  readonly pending: string;
  readonly approved: string;
  readonly rejected: string;
  readonly done: string;
  readonly failed: string;
  readonly logs: string;
  readonly outbox: string;
  /** `<root>/.vaultd`: ledger, grants, lock. */
  readonly state: string;
}

/**
 * Resolve the configured folder names into absolute paths.
 * @param config the loaded config (`vault` absolute, `folders` checked).
 */
export function resolveLayout(config: Pick<Config, 'vault' | 'folders'>): VaultLayout {
  const root = config.vault;
  const f = config.folders;
  return Object.freeze({
    root,
    inbox: join(root, f.inbox),
    inProgress: join(root, f.in_progress),
    pending: join(root, f.pending),
    approved: join(root, f.approved),
    rejected: join(root, f.rejected),
    done: join(root, f.done),
    failed: join(root, f.failed),
    logs: join(root, f.logs),
    outbox: join(root, f.outbox),
    state: join(root, STATE_DIR_NAME),
  });
}

/**
 * Create every folder of the layout that does not exist yet (like `mkdir -p`).
 * @param layout from {@link resolveLayout}.
 * @throws VaultIoError when a folder cannot be created.
 */
export async function ensureLayout(layout: VaultLayout): Promise<void> {
  for (const dir of Object.values(layout) as string[]) {
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      throw toVaultIoError('mkdir', dir, error);
    }
  }
}

/**
 * The vault-relative path of a file with `/` separators, as the ledger and logs name notes
 * (`In_Progress/task.md`).
 * @param layout the vault's folders.
 * @param path absolute path inside the vault.
 */
export function toVaultPath(layout: Pick<VaultLayout, 'root'>, path: string): string {
  return relative(layout.root, path).split(sep).join('/');
}
