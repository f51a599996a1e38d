import { constants } from 'node:fs';
import { lstat, open, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';
import type { FileRoot, VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';

/** A repository found inside the roots: its working tree and git folders, on real paths. */
export interface Repo {
  /** Real path of the working tree (the folder holding `.git`). */
  readonly worktree: string;
  /** Real path of its git folder (`.git`, or what a `.git` file names). */
  readonly gitDir: string;
  /** Real path of the folder holding objects, refs and config (differs for linked worktrees). */
  readonly commonDir: string;
  /** The root the working tree is in. */
  readonly root: FileRoot;
  /** The repository as an agent should name it. */
  readonly display: string;
}

/** A `.git`, `commondir` or `alternates` file is a few lines; anything longer is not one. */
const SMALL_FILE_MAX_BYTES = 16 * 1024;

/**
 * Find the repository an agent named: the folder must be inside a root on its real path, and its
 * `.git` is looked for there and in its parents up to that root, never above it. The `.git`
 * folder (or the folder a `.git` file names, and a linked worktree's common folder) must be
 * inside the roots on its real path too, and so must its parts that are links (`objects`,
 * `refs`, `config`…) and every object store it borrows from (`objects/info/alternates`).
 * @param files the tool's file access.
 * @param repoArg the `repo` parameter; default the vault (the first root).
 * @param mode `write` for tools that change the working tree or the repository.
 * @throws ToolError `PERMISSION_DENIED` outside the roots, `INVALID_PARAMS` when there is no
 *   repository there.
 */
export async function locateRepo(
  files: VaultAccess,
  repoArg: string | undefined,
  mode: 'read' | 'write',
): Promise<Repo> {
  const named = repoArg ?? '.';
  const start = await files.resolve(named, mode);
  if (!start.exists || !(await stat(start.path)).isDirectory()) {
    throw new ToolError(
      'INVALID_PARAMS',
      `${named} is not a folder: give the repository's folder`,
      {
        data: { reason: 'not_a_repository' },
      },
    );
  }
  const roots = files.roots;
  for (let dir = start.path; ; dir = dirname(dir)) {
    const dotGit = join(dir, '.git');
    const info = await lstat(dotGit).catch(() => undefined);
    if (info !== undefined) {
      let gitDir: string;
      if (info.isFile()) gitDir = await gitFileTarget(dotGit, roots);
      else gitDir = await realInside(dotGit, roots, '.git');
      if (!(await isGitDir(gitDir))) {
        throw new ToolError('INVALID_PARAMS', `${named}: ${dotGit} is not a git folder`, {
          data: { reason: 'not_a_repository' },
        });
      }
      const commonDir = await commonDirOf(gitDir, roots);
      await checkEntries(gitDir, commonDir, roots);
      await checkAlternates(commonDir, roots);
      const worktree = await files.resolve(dir, mode);
      return {
        worktree: worktree.path,
        gitDir,
        commonDir,
        root: worktree.root,
        display: files.display(worktree),
      };
    }
    if (dir === start.root.path || dirname(dir) === dir) break;
  }
  throw new ToolError(
    'INVALID_PARAMS',
    `${named} is not in a git repository (no .git in it or its parents up to ${start.root.name})`,
    { data: { reason: 'not_a_repository' } },
  );
}

/**
 * A path inside a repository's working tree, given relative to the repository (or absolute inside
 * it), checked against the roots and as git should read it: repository-relative, literal.
 * @param files the tool's file access (protected folders refused).
 * @param repo the repository.
 * @param path the agent's path.
 * @param mode `write` when the call changes what is at the path (add, commit).
 * @returns the path relative to the working tree (`.` for the whole tree).
 */
export async function repoPath(
  files: VaultAccess,
  repo: Repo,
  path: string,
  mode: 'read' | 'write',
): Promise<string> {
  const absolute = isAbsolute(path) ? resolve(path) : resolve(repo.worktree, path);
  if (!isInside(absolute, repo.worktree)) {
    throw new ToolError(
      'PERMISSION_DENIED',
      `${path} is outside the repository ${repo.display}; give a path inside it`,
    );
  }
  // The real path must stay in the roots and out of vaultd's folders.
  await files.resolve(absolute, mode);
  const rel = relative(repo.worktree, absolute).split(sep).join('/');
  return rel === '' ? '.' : rel;
}

async function realInside(path: string, roots: readonly FileRoot[], what: string): Promise<string> {
  let real: string;
  try {
    real = await realpath(path);
  } catch (error) {
    throw new ToolError('INVALID_PARAMS', `${what} cannot be read: ${(error as Error).message}`, {
      data: { reason: 'not_a_repository' },
    });
  }
  if (!roots.some((root) => isInside(real, root.path))) {
    throw new ToolError(
      'PERMISSION_DENIED',
      `the repository's ${what} is outside the folders this tool may touch (${roots.map((r) => r.name).join(', ')})`,
    );
  }
  return real;
}

async function gitFileTarget(dotGit: string, roots: readonly FileRoot[]): Promise<string> {
  const text = (await readSmall(dotGit)) ?? '';
  const match = /^gitdir: (.+?)\r?\n?$/.exec(text);
  if (match?.[1] === undefined) {
    throw new ToolError('INVALID_PARAMS', `${dotGit} is a file but not a "gitdir:" link`, {
      data: { reason: 'not_a_repository' },
    });
  }
  return realInside(resolve(dirname(dotGit), match[1]), roots, 'git folder (named by .git)');
}

async function isGitDir(path: string): Promise<boolean> {
  const head = await stat(join(path, 'HEAD')).catch(() => undefined);
  return head?.isFile() === true;
}

async function commonDirOf(gitDir: string, roots: readonly FileRoot[]): Promise<string> {
  const text = await readSmall(join(gitDir, 'commondir'));
  if (text === undefined) return gitDir;
  return realInside(resolve(gitDir, text.trim()), roots, 'common git folder (commondir)');
}

/** What git reads and writes inside a git folder: none may lead out of the roots by a link. */
const GIT_ENTRIES = [
  'HEAD',
  'index',
  'config',
  'config.worktree',
  'objects',
  'refs',
  'packed-refs',
  'logs',
  'info',
  'hooks',
  'worktrees',
  'modules',
];

/** The entries above that git reads as files. */
const FILE_ENTRIES = new Set(['HEAD', 'index', 'config', 'config.worktree', 'packed-refs']);

async function checkEntries(
  gitDir: string,
  commonDir: string,
  roots: readonly FileRoot[],
): Promise<void> {
  const dirs = gitDir === commonDir ? [gitDir] : [gitDir, commonDir];
  for (const dir of dirs) {
    for (const entry of GIT_ENTRIES) {
      const path = join(dir, entry);
      const info = await lstat(path).catch(() => undefined);
      if (info?.isSymbolicLink() === true) await realInside(path, roots, `.git/${entry} (a link)`);
      if (info !== undefined && FILE_ENTRIES.has(entry)) {
        // A FIFO or a device would make git wait forever; git reads these as plain files.
        const target = await stat(path).catch(() => undefined);
        if (target !== undefined && !target.isFile()) {
          throw new ToolError('INVALID_PARAMS', `.git/${entry} is not a regular file`, {
            data: { reason: 'not_a_repository' },
          });
        }
      }
    }
  }
}

async function checkAlternates(commonDir: string, roots: readonly FileRoot[]): Promise<void> {
  const objects = join(commonDir, 'objects');
  const text = await readSmall(join(objects, 'info', 'alternates'));
  if (text === undefined) return;
  for (const line of text.split('\n')) {
    const entry = line.trim();
    if (entry === '' || entry.startsWith('#')) continue;
    if (entry.startsWith('"')) {
      throw new ToolError('PERMISSION_DENIED', 'the repository borrows objects from a quoted path');
    }
    await realInside(resolve(objects, entry), roots, 'borrowed object store (alternates)');
  }
}

/**
 * The start of a regular file, or undefined when there is none; a FIFO or a device (which would
 * block git, or never end) is refused.
 * @param path the file.
 */
async function readSmall(path: string): Promise<string | undefined> {
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) return undefined;
  if (!info.isFile()) {
    throw new ToolError('INVALID_PARAMS', `${path} is not a regular file; git would not read it`, {
      data: { reason: 'not_a_repository' },
    });
  }
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const buffer = Buffer.alloc(SMALL_FILE_MAX_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SMALL_FILE_MAX_BYTES, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}
