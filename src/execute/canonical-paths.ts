import { lstatSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { FileRoot, Tool } from '../protocol/types.ts';
import { isInside } from '../vault/access.ts';
import { canonicalPath, CanonicalPathError } from '../vault/canonical-path.ts';

/** Arguments with their path parameters canonical, and how the agent spelled those that changed. */
export interface CanonicalArguments {
  readonly args: Record<string, unknown>;
  /**
   * Each path parameter whose spelling differed from its canonical path, as spelled; for a list
   * of repository-relative paths, the spellings that differed and every element's vault path.
   */
  readonly spelled?: Readonly<Record<string, string | readonly string[]>>;
}

/**
 * Bring a tool's path parameters (`pathParameters`) to their canonical path (see
 * {@link canonicalPath}), so that a policy rule or grant cannot be dodged or stretched by another
 * spelling of the same file (`./x`, `a/../x`, an absolute path, a link the agent made); then its
 * repository-relative path lists (`repoPathParameters`) to their canonical form relative to the
 * repository (see {@link canonicalRepoPath}), with each element's vault path for deny and ask rules.
 * @param tool the tool.
 * @param args its validated, normalised arguments; never modified.
 * @param roots the tool's roots on their real paths; the first is the vault.
 * @returns the arguments to gate, preview and run, or a message when a path cannot be resolved.
 */
export function canonicalPaths(
  tool: Tool,
  args: Record<string, unknown>,
  roots: readonly FileRoot[],
): CanonicalArguments | string {
  const names = tool.pathParameters ?? [];
  let out: Record<string, unknown> | undefined;
  let spelled: Record<string, string | readonly string[]> | undefined;
  for (const name of names) {
    const value = args[name];
    if (typeof value !== 'string') continue;
    let canonical: string;
    try {
      canonical = canonicalPath(roots, value);
    } catch (error) {
      if (error instanceof CanonicalPathError) return `parameter '${name}': ${error.message}`;
      throw error;
    }
    if (canonical === value) continue;
    out ??= { ...args };
    out[name] = canonical;
    spelled ??= {};
    spelled[name] = value;
  }
  for (const [name, base] of Object.entries(tool.repoPathParameters ?? {})) {
    const value = args[name];
    if (!Array.isArray(value)) continue;
    const baseValue = (out ?? args)[base];
    const worktree = repositoryOf(roots, typeof baseValue === 'string' ? baseValue : '.');
    if (worktree === undefined) continue;
    const canonical: unknown[] = [];
    const seen: string[] = [];
    for (const item of value) {
      if (typeof item !== 'string') {
        canonical.push(item);
        continue;
      }
      const form = canonicalRepoPath(worktree, item);
      canonical.push(form);
      if (form !== item) seen.push(item);
      try {
        seen.push(canonicalPath(roots, isAbsolute(form) ? form : join(worktree, form)));
      } catch (error) {
        if (error instanceof CanonicalPathError) return `parameter '${name}': ${error.message}`;
        throw error;
      }
    }
    if (canonical.some((item, i) => item !== value[i])) {
      out ??= { ...args };
      out[name] = canonical;
    }
    spelled ??= {};
    spelled[name] = Object.freeze([...new Set(seen)]);
  }
  if (out === undefined && spelled === undefined) return { args };
  return {
    args: out ?? args,
    ...(spelled === undefined ? {} : { spelled: Object.freeze(spelled) }),
  };
}

/**
 * The canonical form of a path relative to a repository, as git reads it: `.`, `..` and repeated
 * slashes resolved by name (git does not follow links in a path), an absolute path inside the
 * working tree made relative, `.` for the tree itself; a path that leads out of the working tree
 * becomes its absolute form (the tools refuse it). Idempotent, so a canonical call checked again
 * is the same call. Names that look like pathspec magic (`:(top)`, `:/`) stay names: git gets every
 * path as a literal pathspec.
 * @param worktree the real path of the repository's working tree.
 * @param path the path as the agent wrote it.
 */
export function canonicalRepoPath(worktree: string, path: string): string {
  const absolute = isAbsolute(path) ? resolve(path) : resolve(worktree, path);
  if (!isInside(absolute, worktree)) return absolute;
  const rel = relative(worktree, absolute).split(sep).join('/');
  return rel === '' ? '.' : rel;
}

/**
 * The working tree of the repository a canonical folder path is in: the folder at or above it
 * holding `.git`, looked for up to the root it is in (as the git pack looks); undefined when there
 * is none or the path is in no root.
 */
function repositoryOf(roots: readonly FileRoot[], folder: string): string | undefined {
  const first = roots[0];
  if (first === undefined) return undefined;
  const start = isAbsolute(folder) ? folder : resolve(first.path, folder);
  const root = roots.find((r) => isInside(start, r.path));
  if (root === undefined) return undefined;
  for (let dir = start; ; dir = dirname(dir)) {
    try {
      lstatSync(join(dir, '.git'));
      return dir;
    } catch {
      // Not here: look in the parent, up to the root.
    }
    if (dir === root.path || dirname(dir) === dir) return undefined;
  }
}
