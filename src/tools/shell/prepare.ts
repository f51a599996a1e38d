import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';
import type { VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { newTag, runsAsRoot, type SandboxPlan } from './sandbox.ts';

/** The arguments of `shell_exec` and `shell_background`, normalised. */
// A type, not an interface: tools are held as Tool<Record<string, unknown>>.
export type ShellArgs = {
  readonly command: string;
  readonly cwd: string;
  readonly timeout_s: number;
  readonly env: Readonly<Record<string, string>>;
};

/** Where vaultd keeps what no command may change. */
export interface VaultPaths {
  /** Real path of the vault. */
  readonly vault: string;
  /** Real path of vaultd's state folder (`.vaultd`), hidden from commands. */
  readonly state: string;
}

/**
 * Plan one command's sandbox: the working directory resolved inside the tool's roots on its real
 * path (refused outside them, in vaultd's folders, or when it is not a directory), vaultd's state
 * hidden and vaultd's folders kept read-only when the working directory holds the vault.
 * @param args the call's normalised arguments.
 * @param files the tool's roots.
 * @param paths the vault and its state folder.
 * @throws ToolError `PERMISSION_DENIED` or `INVALID_PARAMS` for a working directory not allowed.
 */
export async function planSandbox(
  args: ShellArgs,
  files: VaultAccess,
  paths: VaultPaths,
  runAs?: { readonly uid: number; readonly gid: number },
): Promise<SandboxPlan> {
  const resolved = await files.resolve(args.cwd, 'write');
  if (!resolved.exists || !(await stat(resolved.path)).isDirectory()) {
    throw new ToolError(
      'INVALID_PARAMS',
      `the working directory ${args.cwd} does not exist or is not a folder; create it first or give another cwd`,
    );
  }
  const cwd = resolved.path;
  if (runAs !== undefined && runsAsRoot()) await checkSearchable(cwd, runAs);
  const hide: string[] = [];
  const readOnly: string[] = [];
  if (isInside(paths.vault, cwd)) {
    if (await exists(paths.state)) hide.push(paths.state);
    for (const name of await readdir(paths.vault)) {
      const path = join(paths.vault, name);
      if (path === paths.state) continue;
      const info = await lstat(path).catch(() => undefined);
      if (info === undefined || info.isSymbolicLink()) continue;
      if (await refusedForWrite(files, path)) readOnly.push(await realpath(path));
    }
  }
  return { cwd, env: args.env, hide, readOnly, command: args.command, tag: newTag() };
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

/**
 * Refuse, before anything runs, a working directory the `run_as` user cannot reach (a folder on
 * the way without search permission for it): bwrap would fail with a message about mounts.
 */
async function checkSearchable(
  cwd: string,
  user: { readonly uid: number; readonly gid: number },
): Promise<void> {
  for (let dir = cwd; ; dir = dirname(dir)) {
    const info = await stat(dir);
    const bit = info.uid === user.uid ? 0o100 : info.gid === user.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `commands run as uid ${user.uid} (tools.shell.run_as, since vaultd runs as root), which cannot enter ${dir}; ` +
          'let that user search the folders up to the working directory (chmod o+x, a group, or another run_as)',
      );
    }
    if (dirname(dir) === dir) return;
  }
}
