import { ToolError } from '../../protocol/errors.ts';
import type { VaultAccess } from '../../protocol/types.ts';
import {
  BWRAP,
  checkSearchable,
  dropUserArgv,
  missingSandboxProgram,
  SETPRIV,
  STAT,
  type RunAs,
} from '../sandbox/run-as.ts';
import {
  identityCheckArgv,
  vaultMountArgs,
  vaultMounts,
  type VaultPaths,
} from '../sandbox/vault-mounts.ts';

/** What the commands pack's sandbox needs to know besides the command. */
export interface CommandSandbox {
  /** The vault and vaultd's state folder. */
  readonly paths: VaultPaths;
  /** The user sandboxed commands run as when vaultd runs as root. */
  readonly runAs: RunAs;
}

/**
 * The argument vector that runs a command in a bubblewrap sandbox: (as root: `setpriv` to
 * `run_as` first) a new user namespace with no capabilities, the system read-only, the working
 * directory writable, vaultd's state hidden and, when the working directory holds the vault, the
 * vault's protected folders and files read-only (as the shell pack's sandbox), a private /tmp, no
 * network, a new PID namespace, dying with vaultd, and only the given environment.
 * @param argv the command.
 * @param cwd its working directory (absolute, real).
 * @param env its environment.
 * @param files the tool's roots, which know the vault's protected paths.
 * @param sandbox the vault's paths and `run_as`.
 * @throws ToolError when bubblewrap (or, as root, setpriv) is not installed (never a silent run
 *   without the sandbox), or `run_as` cannot enter the working directory.
 */
export async function sandboxed(
  argv: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string>>,
  files: VaultAccess,
  sandbox: CommandSandbox,
): Promise<string[]> {
  const missing = await missingSandboxProgram();
  if (missing !== undefined) {
    throw new ToolError(
      'EXECUTION_FAILED',
      missing === BWRAP
        ? 'this command runs in a bubblewrap sandbox, and bubblewrap is not installed (apt install bubblewrap)'
        : `this command runs in a sandbox, and ${missing} is not installed (${missing === SETPRIV ? 'util-linux' : missing === STAT ? 'coreutils' : 'bash'})`,
    );
  }
  await checkSearchable(cwd, sandbox.runAs, {
    who: 'sandboxed commands',
    key: 'tools.commands.run_as',
  });
  // The whole system is shown read-only, the vault with it: vaultd's state, config and secrets are
  // hidden wherever the working directory is, not only when it holds the vault.
  const mounts = await vaultMounts(cwd, files, sandbox.paths, true, sandbox.runAs);
  return [
    ...dropUserArgv(sandbox.runAs),
    BWRAP,
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    // Unix sockets are files: read-only, they still connect (no network namespace stops them),
    // and /run holds the user's D-Bus and systemd manager, agents' sockets, journald (review
    // finding: a sandboxed command asked the session bus for its names).
    '--tmpfs',
    '/run',
    '--bind',
    cwd,
    cwd,
    ...vaultMountArgs(mounts),
    '--chdir',
    cwd,
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    ...Object.entries(env).flatMap(([key, value]) => ['--setenv', key, value]),
    '--',
    ...identityCheckArgv(mounts.identities ?? [], argv),
  ];
}
