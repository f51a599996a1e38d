import { dirname } from 'node:path';
import { access, constants } from 'node:fs/promises';
import { runsAsRoot, SETPRIV } from '../sandbox/run-as.ts';

/** Where bubblewrap is expected. */
export const BWRAP = '/usr/bin/bwrap';

/**
 * The program a sandboxed server needs that is not installed: bubblewrap, or (when vaultd runs as
 * root) setpriv; undefined when both are there.
 */
export async function missingSandboxProgram(): Promise<string | undefined> {
  for (const program of [BWRAP, ...(runsAsRoot() ? [SETPRIV] : [])]) {
    try {
      await access(program, constants.X_OK);
    } catch {
      return program;
    }
  }
  return undefined;
}

/**
 * The arguments of bubblewrap that run a language server with the whole file system read-only,
 * the pack's roots visible (read-only, also when they are under /tmp), a private /tmp, no
 * network, its own user (no capabilities) and PID namespaces, dying with vaultd, and only the
 * given environment. As root, the caller runs bwrap through `setpriv` to `run_as`.
 * @param argv the server's program and arguments.
 * @param cwd its working directory (the workspace root, absolute, real).
 * @param roots the pack's roots (absolute, real).
 * @param env its whole environment.
 */
export function sandboxArgs(
  argv: readonly string[],
  cwd: string,
  roots: readonly string[],
  env: Readonly<Record<string, string>>,
): string[] {
  // The private /tmp would hide a server (or vaultd itself, with the server's packages) installed
  // under /tmp: the installation a program path in argv belongs to is shown again, read-only.
  const installs = new Set<string>();
  for (const arg of argv) {
    const value = arg.startsWith('--') && arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : arg;
    if (!value.startsWith('/tmp/')) continue;
    const packages = value.indexOf('/node_modules/');
    installs.add(packages > 0 ? value.slice(0, packages) : dirname(value));
  }
  return [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    ...[...installs].flatMap((path) => ['--ro-bind', path, path]),
    ...roots.flatMap((root) => ['--ro-bind', root, root]),
    '--chdir',
    cwd,
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--clearenv',
    ...Object.entries(env).flatMap(([key, value]) => ['--setenv', key, value]),
    '--',
    ...argv,
  ];
}
