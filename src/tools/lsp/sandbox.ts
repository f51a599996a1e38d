import { basename, dirname, isAbsolute } from 'node:path';
import { isSystemPath, systemViewArgs } from '../sandbox/system-view.ts';
import { identityCheckArgv, type MountIdentity } from '../sandbox/vault-mounts.ts';

/**
 * The arguments of bubblewrap that run a language server with only the system folders shown
 * (read-only; not `/home`, `/root`, `/srv`, `/var`…), the server's own installation and the pack's
 * roots (read-only, also when they are under /tmp), a private /tmp, no network, its own user (no
 * capabilities) and PID namespaces, dying with vaultd, and only the given environment. A file a
 * vault file imports from elsewhere (another user's project, a secrets file) is not there to be
 * read and quoted back in a diagnostic. As root, the caller runs bwrap through `setpriv` to
 * `run_as`.
 * @param argv the server's program and arguments.
 * @param cwd its working directory (the workspace root, absolute, real).
 * @param roots the pack's roots (absolute, real).
 * @param env its whole environment.
 * @param programs more files the server runs (the TypeScript it is given), shown like its own.
 * @param shown more folders to show as they are (`sandbox_paths`).
 * @param hidden bwrap arguments that hide vaultd's own files among those (see `secretMounts`).
 * @param identities the roots and the workspace with the device and inode they must have once
 *   mounted: checked before the server runs (see `identityCheckArgv`).
 */
export function sandboxArgs(
  argv: readonly string[],
  cwd: string,
  roots: readonly string[],
  env: Readonly<Record<string, string>>,
  programs: readonly string[] = [],
  shown: readonly string[] = [],
  hidden: readonly string[] = [],
  identities: readonly MountIdentity[] = [],
): string[] {
  // The installation each program path belongs to, unless a system folder holds it: the
  // `node_modules` folder it is in (its packages and theirs); else, for a program in a `bin`
  // folder, the prefix above it (`~/.local`, a virtual environment, an nvm Node: their `lib` is
  // there); else the folder of the file.
  const installs = new Set<string>(shown);
  for (const arg of [...argv, ...programs]) {
    const value = arg.startsWith('--') && arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : arg;
    if (!isAbsolute(value) || isSystemPath(value)) continue;
    const packages = value.indexOf('/node_modules/');
    if (packages > 0) {
      installs.add(value.slice(0, packages + '/node_modules'.length));
      continue;
    }
    const dir = dirname(value);
    installs.add(basename(dir) === 'bin' && dirname(dir) !== '/' ? dirname(dir) : dir);
  }
  return [
    ...systemViewArgs(),
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    ...[...installs].flatMap((path) => ['--ro-bind', path, path]),
    ...roots.flatMap((root) => ['--ro-bind', root, root]),
    ...hidden,
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
    ...identityCheckArgv(identities, argv),
  ];
}
