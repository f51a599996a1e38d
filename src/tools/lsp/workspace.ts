import { constants } from 'node:fs';
import { access, lstat, readdir, realpath, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, delimiter, dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isInside } from '../../vault/access.ts';
import type { ServerConfig } from './config.ts';

/** Folders never looked into when a directory's files are gathered. */
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'build', 'out', 'coverage', 'target']);
/** Directory entries looked at, at most, when a directory's files are gathered. */
const MAX_ENTRIES_SCANNED = 20_000;

/** A language server's program, ready to spawn. */
export interface ResolvedCommand {
  readonly file: string;
  readonly args: readonly string[];
  /** The program's real path (for finding what it ships with). */
  readonly real: string;
}

/**
 * The `PATH` a language server gets: vaultd's own, without empty or relative entries (the
 * server's working directory is in the vault, where a relative entry would find an agent's file).
 */
export function safePath(): string {
  const entries = (process.env['PATH'] ?? '/usr/bin:/bin')
    .split(delimiter)
    .filter((entry) => entry !== '' && isAbsolute(entry));
  return entries.length > 0 ? entries.join(delimiter) : '/usr/bin:/bin';
}

/**
 * Find a server's program: a path as given, else the name in `PATH`, else in vaultd's own
 * `node_modules/.bin`. A JavaScript program is run with the Node vaultd runs on, so that `node`
 * need not be on `PATH`.
 * @param command the configured command.
 * @param args the configured arguments.
 * @returns the program, or undefined when it is nowhere.
 */
export async function resolveCommand(
  command: string,
  args: readonly string[],
): Promise<ResolvedCommand | undefined> {
  const candidates = command.includes('/')
    ? [command]
    : [
        ...safePath()
          .split(delimiter)
          .map((dir) => join(dir, command)),
        ...ownBinFolders().map((dir) => join(dir, command)),
      ];
  for (const candidate of candidates) {
    if (!(await isExecutableFile(candidate))) continue;
    const real = await realpath(candidate);
    if (/\.(?:m|c)?js$/.test(real)) return { file: process.execPath, args: [real, ...args], real };
    return { file: candidate, args, real };
  }
  return undefined;
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** `node_modules/.bin` folders from this file up to the file-system root. */
function ownBinFolders(): string[] {
  const out: string[] = [];
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    out.push(join(dir, 'node_modules', '.bin'));
    const parent = dirname(dir);
    if (parent === dir) return out;
    dir = parent;
  }
}

/**
 * The `tsserver.js` that typescript-language-server should run: the TypeScript installed beside
 * the server program, else vaultd's own. Never the workspace's, which an agent could write.
 * @param serverReal the server program's real path.
 */
export function trustedTsserver(serverReal: string): string | undefined {
  for (const from of [serverReal, fileURLToPath(import.meta.url)]) {
    try {
      const main = createRequire(from).resolve('typescript');
      return join(dirname(main), 'tsserver.js');
    } catch {
      // Not there; try the next place.
    }
  }
  return undefined;
}

/**
 * Whether a server is typescript-language-server (which would otherwise run the workspace's
 * TypeScript).
 * @param server its config.
 * @param command its resolved program.
 */
export function isTypescriptLanguageServer(
  server: ServerConfig,
  command: ResolvedCommand,
): boolean {
  return (
    basename(server.command) === 'typescript-language-server' ||
    command.real.includes(`${'/'}typescript-language-server${'/'}`)
  );
}

/**
 * The workspace root of a file or folder: the nearest folder at or above it holding one of the
 * server's root markers, never above the root the path is in; the root itself when none does.
 * @param path absolute real path of a file or folder inside `root`.
 * @param isDirectory whether `path` is a folder.
 * @param root absolute real path of the root it is in.
 * @param markers the server's root markers.
 */
export async function findWorkspaceRoot(
  path: string,
  isDirectory: boolean,
  root: string,
  markers: readonly string[],
): Promise<string> {
  let dir = isDirectory ? path : dirname(path);
  while (isInside(dir, root)) {
    for (const marker of markers) {
      try {
        await stat(join(dir, marker));
        return dir;
      } catch {
        // No marker here; look one folder up.
      }
    }
    if (dir === root) break;
    dir = dirname(dir);
  }
  return root;
}

/**
 * The files under a folder whose extension a server serves, sorted, at most `max`; hidden
 * folders, `node_modules` and build output are skipped, links are not followed, and files with
 * other hard links (one may be outside the roots) are left out.
 * @param dir absolute real path of the folder.
 * @param extensions the extensions wanted (lower case, with the dot).
 * @param max how many files at most.
 * @returns the files, and whether more were there than `max`.
 */
export async function filesUnder(
  dir: string,
  extensions: ReadonlySet<string>,
  max: number,
): Promise<{ files: string[]; more: boolean }> {
  const files: string[] = [];
  let scanned = 0;
  let more = false;
  const walk = async (folder: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (more || ++scanned > MAX_ENTRIES_SCANNED) {
        more = true;
        return;
      }
      if (entry.name.startsWith('.')) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_FOLDERS.has(entry.name)) await walk(path);
      } else if (entry.isFile()) {
        const dot = entry.name.lastIndexOf('.');
        if (dot > 0 && extensions.has(entry.name.slice(dot).toLowerCase())) {
          const nlink = await lstat(path).then(
            (info) => info.nlink,
            () => 2,
          );
          if (nlink > 1) continue;
          if (files.length >= max) {
            more = true;
            return;
          }
          files.push(path);
        }
      }
    }
  };
  await walk(dir);
  return { files, more };
}
