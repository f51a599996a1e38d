import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { FileRoot } from '../protocol/types.ts';
import { isInside } from './access.ts';

/** Why a path has no canonical form: a loop of links, a folder that cannot be searched. */
export class CanonicalPathError extends Error {
  readonly path: string;

  constructor(path: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException).code;
    super(
      code === 'ELOOP'
        ? `${path} is a loop of symbolic links`
        : `cannot resolve ${path}: ${(cause as Error).message}`,
      { cause },
    );
    this.name = 'CanonicalPathError';
    this.path = path;
  }
}

// C0 controls, DEL and C1 controls: such a path is refused by the access layer, never resolved.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/**
 * The one spelling of a path that policy rules and grants are matched against: resolved against
 * the first root (the vault) as the access layer resolves it, `.`, `..` and repeated slashes gone,
 * symbolic links resolved (the real path of the deepest existing ancestor, the missing components
 * appended), then written relative to the first root (`.` for the root itself, `/` between
 * components) when it is inside it, else as the absolute real path. A path the access layer
 * refuses before resolving it (empty, control characters) and any path when there is no root are
 * returned as given: no call runs with them. Reads the file system synchronously (one `realpath`
 * per missing component), since the executor's argument check is synchronous.
 * @param roots the tool's roots, on their real paths (a {@link FileRoot} list of an access).
 * @param path the path as the agent wrote it.
 * @throws CanonicalPathError for a loop of links or a folder that cannot be searched.
 */
export function canonicalPath(roots: readonly FileRoot[], path: string): string {
  const first = roots[0];
  if (first === undefined || path.trim() === '' || CONTROL.test(path)) return path;
  const candidate = isAbsolute(path) ? resolve(path) : resolve(first.path, path);
  const real = realPathSync(candidate);
  if (!isInside(real, first.path)) return real;
  const rel = relative(first.path, real).split(sep).join('/');
  return rel === '' ? '.' : rel;
}

/**
 * The real path of a path that may not exist yet: the deepest existing ancestor's real path with
 * the missing components appended (they cannot be links, since they do not exist).
 * @param candidate an absolute path.
 * @throws CanonicalPathError for errors other than a missing component.
 */
export function realPathSync(candidate: string): string {
  const missing: string[] = [];
  let current = candidate;
  for (;;) {
    try {
      const real = realpathSync.native(current);
      return missing.length === 0 ? real : join(real, ...missing.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new CanonicalPathError(candidate, error);
      const parent = dirname(current);
      if (parent === current) return candidate;
      missing.push(basename(current));
      current = parent;
    }
  }
}
