import { stat } from 'node:fs/promises';
import { ToolError } from '../../protocol/errors.ts';
import type { VaultAccess } from '../../protocol/types.ts';
import { checkSearchable, type RunAs } from '../sandbox/run-as.ts';
import { vaultMounts, type VaultPaths } from '../sandbox/vault-mounts.ts';
import { newTag, type SandboxPlan } from './sandbox.ts';

export type { VaultPaths } from '../sandbox/vault-mounts.ts';

/** The arguments of `shell_exec` and `shell_background`, normalised. */
// A type, not an interface: tools are held as Tool<Record<string, unknown>>.
export type ShellArgs = {
  readonly command: string;
  readonly cwd: string;
  readonly timeout_s: number;
  readonly env: Readonly<Record<string, string>>;
};

/**
 * Plan one command's sandbox: the working directory resolved inside the tool's roots on its real
 * path (refused outside them, in vaultd's folders, or when it is not a directory), vaultd's state
 * and config hidden, and vaultd's folders, config and plugins kept read-only when the working
 * directory holds them.
 * @param args the call's normalised arguments.
 * @param files the tool's roots.
 * @param paths the vault and its state folder.
 * @throws ToolError `PERMISSION_DENIED` or `INVALID_PARAMS` for a working directory not allowed.
 */
export async function planSandbox(
  args: ShellArgs,
  files: VaultAccess,
  paths: VaultPaths,
  runAs?: RunAs,
): Promise<SandboxPlan> {
  const resolved = await files.resolve(args.cwd, 'write');
  if (!resolved.exists || !(await stat(resolved.path)).isDirectory()) {
    throw new ToolError(
      'INVALID_PARAMS',
      `the working directory ${args.cwd} does not exist or is not a folder; create it first or give another cwd`,
    );
  }
  const cwd = resolved.path;
  if (runAs !== undefined) {
    await checkSearchable(cwd, runAs, { who: 'commands', key: 'tools.shell.run_as' });
  }
  const mounts = await vaultMounts(cwd, files, paths, false, runAs);
  return { ...mounts, cwd, env: args.env, command: args.command, tag: newTag() };
}
