import { access, constants } from 'node:fs/promises';
import { ToolError } from '../../protocol/errors.ts';

const BWRAP = '/usr/bin/bwrap';

/**
 * The argument vector that runs a command in a bubblewrap sandbox: the system read-only, the
 * working directory writable, a private /tmp, no network, a new PID namespace, dying with vaultd,
 * and only the given environment.
 * @param argv the command.
 * @param cwd its working directory (absolute, real).
 * @param env its environment.
 * @throws ToolError when bubblewrap is not installed (never a silent run without the sandbox).
 */
export async function sandboxed(
  argv: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string>>,
): Promise<string[]> {
  try {
    await access(BWRAP, constants.X_OK);
  } catch {
    throw new ToolError(
      'EXECUTION_FAILED',
      'this command runs in a bubblewrap sandbox, and bubblewrap is not installed (apt install bubblewrap)',
    );
  }
  return [
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
    '--bind',
    cwd,
    cwd,
    '--chdir',
    cwd,
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    ...Object.entries(env).flatMap(([key, value]) => ['--setenv', key, value]),
    '--',
    ...argv,
  ];
}
