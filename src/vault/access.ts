import type { Stats } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ToolError } from '../protocol/errors.ts';
import type { FileRoot, ResolvedPath, VaultAccess } from '../protocol/types.ts';
import { gitShapedFolderIn, type GitShapedFolder } from './git-folders.ts';

/** A root as configured: a name, a folder, and whether tools may write in it. */
export interface RootSpec {
  readonly name: string;
  readonly path: string;
  readonly writable: boolean;
}

/** Options of {@link createVaultAccess}. */
export interface AccessOptions {
  /** The roots; relative paths resolve against the first. */
  readonly roots: readonly RootSpec[];
  /** Paths (folders or files) no tool may write: vaultd's own folders, state, config, plugins. */
  readonly protectedForWrite?: readonly string[];
  /** Paths no tool may read: vaultd's state (`.vaultd/`), its config file, `/etc/vaultd`. */
  readonly protectedForRead?: readonly string[];
  /**
   * Both lists already resolved by {@link resolveProtection}, in place of the two above: a host
   * making an access per pack resolves them once.
   */
  readonly protection?: Protection;
}

/** Protected paths in the forms the checks compare against (see {@link resolveProtection}). */
export interface Protection {
  readonly write: readonly string[];
  readonly read: readonly string[];
}

/** A {@link VaultAccess} that can hand out a view recording the files one call changed. */
export interface SharedAccess extends VaultAccess {
  /**
   * The same access, with `changed` reporting to this call's listener.
   * @param onChanged told about each file the call wrote.
   */
  forCall(onChanged: (path: string) => void): VaultAccess;
}

// C0 controls, DEL and C1 controls have no place in a path an agent names.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/** The name git keeps a repository under, a folder or a `gitdir:` file. */
const GIT_DIR = '.git';

/**
 * Build the paths tools may touch: every path is resolved against a root on its real path
 * (symbolic links resolved, also for the parent of a file that does not exist yet) and must stay
 * inside a root, with the separator as the boundary (`/vault2` is not inside `/vault`); writes
 * need a writable root and never reach a protected path nor a `.git` folder or file at any depth
 * below a root, nor any folder git would take for a git folder whatever its name (one holding
 * `HEAD`: a bare `x.git`, a `--separate-git-dir` folder), nor an entry named `HEAD` (see
 * {@link gitShapedFolderIn}): their hooks and config run when a person next uses git there; git
 * tools change a repository through git, not through this; reads never reach a path protected for reading. The
 * roots' and protected paths' real paths are read once here.
 * @param options roots and protected paths.
 */
export async function createVaultAccess(options: AccessOptions): Promise<SharedAccess> {
  const roots: FileRoot[] = [];
  for (const spec of options.roots) {
    roots.push(
      Object.freeze({
        name: spec.name,
        path: await realOrResolved(spec.path),
        writable: spec.writable,
      }),
    );
  }
  // Each root's real path and its path as configured: a write is checked against both.
  const tops = roots.flatMap((r, i) => [r.path, resolve(options.roots[i]?.path ?? r.path)]);
  const protectedPaths =
    options.protection ??
    (await resolveProtection({
      write: options.protectedForWrite ?? [],
      read: options.protectedForRead ?? [],
    }));
  const noWrite = protectedPaths.write;
  const noRead = protectedPaths.read;
  const make = (onChanged: (path: string) => void): SharedAccess => ({
    roots,
    protectedPaths,
    async resolve(input, mode) {
      if (typeof input !== 'string' || input.trim() === '') {
        throw new ToolError('INVALID_PARAMS', 'the path is empty: give a path inside the vault');
      }
      if (CONTROL.test(input)) {
        throw new ToolError(
          'INVALID_PARAMS',
          'the path holds a control character (a NUL byte, a newline…); write the path as plain text',
        );
      }
      const first = roots[0];
      if (first === undefined) {
        throw new ToolError('PERMISSION_DENIED', 'this tool has no folder it may touch');
      }
      const candidate = isAbsolute(input) ? resolve(input) : resolve(first.path, input);
      const { real, exists } = await realPathOf(candidate);
      const root = roots.find((r) => isInside(real, r.path));
      if (root === undefined) {
        throw new ToolError(
          'PERMISSION_DENIED',
          `${input} is outside the folders this tool may touch (${roots.map((r) => r.name).join(', ')}); give a path inside the vault`,
        );
      }
      if (mode === 'write' && !root.writable) {
        throw new ToolError('PERMISSION_DENIED', `${input} is in ${root.name}, which is read-only`);
      }
      const blocked = (mode === 'write' ? noWrite : noRead).find((p) => isInside(real, p));
      if (blocked !== undefined) {
        throw new ToolError(
          'PERMISSION_DENIED',
          `${input} ${real === blocked ? '' : `is in ${relativeTo(root, blocked)}, which `}belongs to vaultd (or the editor): no tool may ${mode === 'write' ? 'change' : 'read'} it`,
        );
      }
      if (mode === 'write') {
        // The path as spelled too: a `.git` that is a link to a folder of another name is still
        // the repository's.
        const git =
          gitFolderIn(real, root.path) ??
          tops.map((top) => gitFolderIn(candidate, top)).find((g) => g !== undefined);
        if (git !== undefined) {
          throw new ToolError(
            'PERMISSION_DENIED',
            `${input} is ${git.whole ? '' : 'in '}${git.shown}, a git repository's own folder, which no tool may change: its hooks and config run as programs when someone next uses git there; change a repository with the git tools`,
          );
        }
        const shaped =
          (await gitShapedFolderIn(real, root.path)) ??
          (candidate === real
            ? undefined
            : await firstDefined(tops.map((top) => () => gitShapedFolderIn(candidate, top))));
        if (shaped !== undefined) throw gitShapedRefusal(input, shaped);
      }
      return Object.freeze({ path: real, root, relative: relativeTo(root, real), exists });
    },
    display(resolved: ResolvedPath): string {
      return resolved.root === roots[0] ? resolved.relative : resolved.path;
    },
    changed(path: string): void {
      onChanged(path);
    },
    forCall(listener) {
      return make(listener);
    },
  });
  return make(() => undefined);
}

/**
 * Whether `child` is `parent` or inside it, by path components.
 * @param child absolute path.
 * @param parent absolute path.
 */
export function isInside(child: string, parent: string): boolean {
  if (child === parent) return true;
  return child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/**
 * The first `.git` component of `path` below `top` (compared without case: on a case-insensitive
 * disk `.GIT` is the same folder), as `/`-separated path from `top`, and whether it is the whole
 * path; undefined when there is none or `path` is not below `top`.
 */
function gitFolderIn(path: string, top: string): { shown: string; whole: boolean } | undefined {
  if (!isInside(path, top)) return undefined;
  const parts = relative(top, path).split(sep);
  const at = parts.findIndex((part) => part.toLowerCase() === GIT_DIR);
  if (at < 0) return undefined;
  return { shown: parts.slice(0, at + 1).join('/'), whole: at === parts.length - 1 };
}

async function firstDefined<T>(
  makers: readonly (() => Promise<T | undefined>)[],
): Promise<T | undefined> {
  for (const make of makers) {
    const found = await make();
    if (found !== undefined) return found;
  }
  return undefined;
}

function gitShapedRefusal(input: string, shaped: GitShapedFolder): ToolError {
  const why =
    'git takes any folder holding HEAD (with objects/ and refs/, or a commondir file) for a repository, whatever its name, and runs its hooks and config as programs when someone next uses git there; change a repository with the git tools';
  return new ToolError(
    'PERMISSION_DENIED',
    shaped.makesHead
      ? `${input} names a HEAD in ${shaped.shown}, which no tool may write: ${why}`
      : `${input} is ${shaped.whole ? '' : 'in '}${shaped.shown}, a git folder (it holds HEAD), which no tool may change: ${why}`,
    { data: { reason: 'git_folder' } },
  );
}

function relativeTo(root: FileRoot, path: string): string {
  const rel = relative(root.path, path).split(sep).join('/');
  return rel === '' ? '.' : rel;
}

/**
 * Protected paths in the forms the checks compare against: each one's real path, and every
 * symbolic link on the way to it as a path of its own (its folder's real path and its name). A
 * config file kept as a link (`vaultd.yaml` → a dotfiles checkout) is then protected as the file
 * it leads to and as the link, which removing and making again would otherwise replace. Each
 * folder on the way is looked at once for both lists (they share the vault's path).
 * @param paths absolute paths no tool may write, and no tool may read.
 */
export async function resolveProtection(paths: {
  readonly write: readonly string[];
  readonly read: readonly string[];
}): Promise<Protection> {
  const seen = new Map<string, Promise<Stats | undefined>>();
  const look = (path: string): Promise<Stats | undefined> => {
    let info = seen.get(path);
    if (info === undefined) seen.set(path, (info = lstat(path).catch(() => undefined)));
    return info;
  };
  const forms = async (list: readonly string[]): Promise<readonly string[]> => {
    const out = new Set<string>();
    for (const path of list) {
      out.add(await realOrResolved(path));
      for (const link of await linksOnTheWay(resolve(path), look)) out.add(link);
    }
    return Object.freeze([...out]);
  };
  return Object.freeze({ write: await forms(paths.write), read: await forms(paths.read) });
}

/** The symbolic links met resolving `path` component by component, each named by its real folder. */
async function linksOnTheWay(
  path: string,
  look: (path: string) => Promise<Stats | undefined>,
): Promise<string[]> {
  const links: string[] = [];
  let at = '/';
  for (const part of path.split(sep).filter((p) => p !== '')) {
    const here = join(at, part);
    const info = await look(here);
    if (info === undefined) break;
    if (info.isSymbolicLink()) {
      links.push(here);
      const real = await realpath(here).catch(() => undefined);
      if (real === undefined) break;
      at = real;
    } else at = here;
  }
  return links;
}

async function realOrResolved(path: string): Promise<string> {
  // A protected path vaultd cannot resolve (a folder it may not search) is kept as written.
  return (await realPathOf(resolve(path)).catch(() => ({ real: resolve(path) }))).real;
}

/**
 * The real path of a path that may not exist yet: the deepest existing ancestor's real path, with
 * the missing components appended (they cannot be links, since they do not exist).
 */
async function realPathOf(candidate: string): Promise<{ real: string; exists: boolean }> {
  const missing: string[] = [];
  let current = candidate;
  for (;;) {
    try {
      const real = await realpath(current);
      return {
        real: missing.length === 0 ? real : join(real, ...missing.reverse()),
        exists: missing.length === 0,
      };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') {
        if (code === 'ELOOP') {
          throw new ToolError('PERMISSION_DENIED', `${candidate} is a loop of symbolic links`);
        }
        throw new ToolError(
          'EXECUTION_FAILED',
          `cannot resolve ${candidate}: ${(error as Error).message}`,
        );
      }
      const parent = dirname(current);
      if (parent === current) return { real: candidate, exists: false };
      missing.push(basename(current));
      current = parent;
    }
  }
}

/** Access to nothing: every path is refused (for a tool run without a vault). */
export function noAccess(): SharedAccess {
  const access: SharedAccess = {
    roots: [],
    resolve: () =>
      Promise.reject(new ToolError('PERMISSION_DENIED', 'this tool has no folder it may touch')),
    display: (resolved) => resolved.path,
    changed: () => undefined,
    forCall: () => access,
  };
  return access;
}
