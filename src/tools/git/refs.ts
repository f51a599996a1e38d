import { ToolError } from '../../protocol/errors.ts';
import { runGit, type GitSession } from './run.ts';

/** A ref name: what a branch name may be (git's rules, and never an option). */
const NAME = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$/;
/** A revision: a name or hash, then reflog and ancestry suffixes (`@{1}`, `~2`, `^`). */
const REVISION =
  /^(?:[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}|@)?(?:@\{(?:-?[0-9]{1,6}|upstream|u|push)\}|[~^][0-9]{0,6}){0,20}$/;
/** A remote's name. */
const REMOTE = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/;

/**
 * Check a name for a branch: it cannot be read as an option or a revision expression, and it
 * follows git's ref-name rules (no `..`, `//`, `@{`, trailing `.` or `/`, `.lock` ending).
 * @param name the agent's value.
 * @param what the parameter, for the message.
 * @throws ToolError `INVALID_PARAMS`.
 */
export function checkBranchName(name: string, what = 'name'): string {
  if (
    !NAME.test(name) ||
    /\.\.|\/\/|\/\.|@\{|\.lock(?:\/|$)|[./]$/.test(name) ||
    name === 'HEAD' ||
    name === '@'
  ) {
    throw new ToolError(
      'INVALID_PARAMS',
      `${what} ${JSON.stringify(name)} is not a branch name git accepts here: letters, digits, '.', '_', '-', '/', starting with a letter, digit or '_'`,
    );
  }
  return name;
}

/**
 * Check a revision (`main`, `v1.2`, a hash, `HEAD~2`, `main@{1}`): never an option, never a path
 * (`rev:path`), a range or a search.
 * @param value the agent's value.
 * @param what the parameter, for the message.
 */
export function checkRevision(value: string, what = 'ref'): string {
  if (
    value === '' ||
    !REVISION.test(value) ||
    value.includes('..') ||
    /\.lock(?:[~^@]|$)/.test(value)
  ) {
    throw new ToolError(
      'INVALID_PARAMS',
      `${what} ${JSON.stringify(value)} is not a revision: give a branch, tag or commit hash, optionally with ~N, ^N or @{N}`,
    );
  }
  return value;
}

/** A range of commits as `A..B` or `A...B`, either side optional (HEAD). */
export interface Range {
  readonly from: string | undefined;
  readonly to: string | undefined;
  /** `...`: from the merge base (diff) or the symmetric difference (log). */
  readonly symmetric: boolean;
}

/**
 * Read a revision or a range: `A`, `A..B`, `A...B`, `..B`, `A..`.
 * @param value the agent's value.
 * @param what the parameter, for the message.
 */
export function parseRange(value: string, what = 'ref'): Range | { single: string } {
  const symmetric = value.includes('...');
  const parts = value.split(symmetric ? '...' : '..');
  if (parts.length === 1) return { single: checkRevision(value, what) };
  if (parts.length !== 2 || (parts[0] === '' && parts[1] === '')) {
    throw new ToolError('INVALID_PARAMS', `${what} ${JSON.stringify(value)} is not a range A..B`);
  }
  const [from = '', to = ''] = parts;
  return {
    from: from === '' ? undefined : checkRevision(from, what),
    to: to === '' ? undefined : checkRevision(to, what),
    symmetric,
  };
}

/**
 * The commit a checked revision names, as a full hash (so only hashes reach other commands).
 * @param session the repository.
 * @param revision a value that passed {@link checkRevision}.
 * @throws ToolError `INVALID_PARAMS` with reason `unknown_ref` when it names no commit.
 */
export async function resolveCommit(session: GitSession, revision: string): Promise<string> {
  const out = await runGit(session, [
    'rev-parse',
    '--verify',
    '--quiet',
    '--end-of-options',
    `${checkRevision(revision)}^{commit}`,
  ]);
  const hash = out.stdout.trim();
  if (out.exitCode !== 0 || !/^[0-9a-f]{40,64}$/.test(hash)) {
    throw new ToolError(
      'INVALID_PARAMS',
      `${revision} names no commit in ${session.repo.display}`,
      {
        data: { reason: 'unknown_ref' },
      },
    );
  }
  return hash;
}

/**
 * Whether a local branch of that name exists.
 * @param session the repository.
 * @param name a checked branch name.
 */
export async function branchExists(session: GitSession, name: string): Promise<boolean> {
  const out = await runGit(session, [
    'show-ref',
    '--verify',
    '--quiet',
    `refs/heads/${checkBranchName(name)}`,
  ]);
  return out.exitCode === 0;
}

/**
 * The branch checked out, or undefined when HEAD is detached.
 * @param session the repository.
 */
export async function currentBranch(session: GitSession): Promise<string | undefined> {
  const out = await runGit(session, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  const name = out.stdout.trim();
  return out.exitCode === 0 && name !== '' ? name : undefined;
}

/**
 * Check a remote's name and that the repository has that remote.
 * @param session the repository.
 * @param name the agent's value.
 */
export async function checkRemote(session: GitSession, name: string): Promise<string> {
  if (!REMOTE.test(name)) {
    throw new ToolError('INVALID_PARAMS', `remote ${JSON.stringify(name)} is not a remote's name`);
  }
  const out = await runGit(session, ['remote']);
  const remotes = out.stdout.split('\n').filter((r) => r !== '');
  if (!remotes.includes(name)) {
    throw new ToolError(
      'INVALID_PARAMS',
      `${session.repo.display} has no remote ${name}${remotes.length === 0 ? '' : ` (its remotes: ${remotes.join(', ')})`}`,
      { data: { reason: 'unknown_ref' } },
    );
  }
  return name;
}
