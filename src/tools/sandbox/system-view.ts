import { lstatSync, readlinkSync } from 'node:fs';

/**
 * The system folders a sandbox shows, read-only: what programs need to run (binaries, libraries,
 * `/etc`), and nothing of the users' (`/home`, `/root`, `/srv`, `/var`, `/run`, `/mnt`…).
 */
const SYSTEM_PATHS: readonly string[] = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
  '/opt',
];

/** Whether `path` (absolute) is one of the system folders or inside one. */
export function isSystemPath(path: string): boolean {
  return SYSTEM_PATHS.some((dir) => path === dir || path.startsWith(`${dir}/`));
}

let cached: readonly string[] | undefined;

/**
 * The bwrap arguments that show the system folders of this machine read-only, read once: a folder
 * is bound, a link (`/bin` → `usr/bin`) is made again as a link, a missing one is left out.
 */
export function systemViewArgs(): readonly string[] {
  if (cached !== undefined) return cached;
  const args: string[] = [];
  for (const path of SYSTEM_PATHS) {
    try {
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
      else if (stat.isDirectory()) args.push('--ro-bind', path, path);
    } catch {
      // Not on this system.
    }
  }
  cached = args;
  return args;
}
