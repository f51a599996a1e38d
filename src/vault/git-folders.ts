import { lstat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

/**
 * The entry git looks for first when it asks whether a folder is a git folder (`is_git_directory`
 * reads `HEAD`, then looks for `objects/` and `refs/`, or a `commondir` file): without it, no name
 * makes a folder a repository; with it, any name can (`backup.git`, a `--separate-git-dir` folder,
 * a folder an agent filled file by file).
 */
const HEAD = 'head';

/** A git folder a write would reach or make, as {@link gitShapedFolderIn} finds it. */
export interface GitShapedFolder {
  /** The folder, `/`-separated from the top (`.` for the top itself). */
  readonly shown: string;
  /** The written path is that folder itself (a move or removal of the whole folder). */
  readonly whole: boolean;
  /** The written path is (or is under) an entry named `HEAD`, which would make the folder one. */
  readonly makesHead: boolean;
}

/**
 * The first folder from `top` down to `path` (both included) that git would take for a git folder,
 * whatever its name, or that writing `path` would turn into one. A folder counts when it holds an
 * entry named `HEAD` (any case: on a case-insensitive disk `head` is the same file); writing a
 * path with a component named `HEAD` counts too, so that no order of writes (`hooks/`, `config`,
 * `objects/`, `refs/`, then `HEAD`; or all at once from concurrent calls) builds a repository
 * whose hooks and config run when someone next uses git there. Reads one `lstat` per folder.
 * @param path an absolute path below or at `top`.
 * @param top the root it is in.
 * @param known optional: folders already looked at (whether each holds `HEAD`), for many paths.
 * @returns the folder, or undefined when there is none or `path` is not below `top`.
 */
export async function gitShapedFolderIn(
  path: string,
  top: string,
  known?: Map<string, boolean>,
): Promise<GitShapedFolder | undefined> {
  if (path !== top && !path.startsWith(top.endsWith(sep) ? top : top + sep)) return undefined;
  const rel = relative(top, path);
  const parts = rel === '' ? [] : rel.split(sep);
  const named = parts.findIndex((part) => part.toLowerCase() === HEAD);
  if (named >= 0) {
    const shown = named === 0 ? '.' : parts.slice(0, named).join('/');
    return { shown, whole: false, makesHead: true };
  }
  for (let i = 0; i <= parts.length; i++) {
    const folder = join(top, ...parts.slice(0, i));
    let holds = known?.get(folder);
    if (holds === undefined) {
      holds = (await lstat(join(folder, 'HEAD')).catch(() => undefined)) !== undefined;
      known?.set(folder, holds);
    }
    if (holds) {
      const shown = i === 0 ? '.' : parts.slice(0, i).join('/');
      return { shown, whole: i === parts.length, makesHead: false };
    }
  }
  return undefined;
}
