import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { Tool } from '../../protocol/types.ts';
import {
  capText,
  PATHS_PARAM,
  pathspecs,
  REPO_PARAM,
  sessionFor,
  trimmed,
  type RuntimeHolder,
} from './common.ts';
import { checkBranchName, parseRange, resolveCommit } from './refs.ts';
import { gitFailure, mustGit, runGit, type GitSession } from './run.ts';

const READ = { safety: 'safe', readOnly: true, idempotent: true } as const;
/** Files listed by git_status at most. */
const MAX_STATUS_FILES = 1000;

/** One changed file as git_status reports it. */
export interface StatusFile {
  readonly path: string;
  /** `modified`, `added`, `deleted`, `renamed`, `copied`, `type_changed`, `untracked`, `conflicted`. */
  readonly status: string;
  /** The index (staged) and working-tree letters of `git status --porcelain`. */
  readonly index: string;
  readonly worktree: string;
  readonly staged: boolean;
  readonly orig_path?: string;
}

const WORDS: Record<string, string> = {
  M: 'modified',
  A: 'added',
  D: 'deleted',
  R: 'renamed',
  C: 'copied',
  T: 'type_changed',
};

/**
 * Read `git status --porcelain=v2 --branch -z`.
 * @param text its output.
 */
export function parseStatus(text: string): {
  branch: string | null;
  commit: string | null;
  upstream: string | null;
  ahead: number;
  behind: number;
  files: StatusFile[];
} {
  const out = {
    branch: null as string | null,
    commit: null as string | null,
    upstream: null as string | null,
    ahead: 0,
    behind: 0,
    files: [] as StatusFile[],
  };
  const entries = text.split('\0');
  for (let i = 0; i < entries.length; i += 1) {
    const entry = entries[i] ?? '';
    if (entry.startsWith('# ')) {
      const [, key = '', ...rest] = entry.split(' ');
      const value = rest.join(' ');
      if (key === 'branch.oid') out.commit = value === '(initial)' ? null : value;
      else if (key === 'branch.head') out.branch = value === '(detached)' ? null : value;
      else if (key === 'branch.upstream') out.upstream = value;
      else if (key === 'branch.ab') {
        const m = /^\+(\d+) -(\d+)$/.exec(value);
        out.ahead = Number(m?.[1] ?? 0);
        out.behind = Number(m?.[2] ?? 0);
      }
    } else if (entry.startsWith('? ')) {
      out.files.push({
        path: entry.slice(2),
        status: 'untracked',
        index: '?',
        worktree: '?',
        staged: false,
      });
    } else if (entry.startsWith('1 ') || entry.startsWith('2 ') || entry.startsWith('u ')) {
      const kind = entry[0];
      const fields = kind === '1' ? 8 : kind === '2' ? 9 : 10;
      const parts = entry.split(' ');
      const xy = parts[1] ?? '..';
      const path = parts.slice(fields).join(' ');
      const index = xy[0] ?? '.';
      const worktree = xy[1] ?? '.';
      let orig: string | undefined;
      if (kind === '2') {
        i += 1;
        orig = entries[i];
      }
      const letter = index !== '.' ? index : worktree;
      out.files.push({
        path,
        status: kind === 'u' ? 'conflicted' : (WORDS[letter] ?? 'modified'),
        index,
        worktree,
        staged: kind !== 'u' && index !== '.',
        ...(orig === undefined ? {} : { orig_path: orig }),
      });
    }
  }
  return out;
}

/** One commit as git_log reports it. */
export interface LogCommit {
  readonly hash: string;
  readonly author: string;
  readonly email: string;
  readonly date: string;
  readonly subject: string;
}

const LOG_FORMAT = '--format=%H%n%an%n%ae%n%aI%n%s';

/**
 * Read `git log -z` with {@link LOG_FORMAT}.
 * @param text its output.
 */
export function parseLog(text: string): LogCommit[] {
  return text
    .split('\0')
    .filter((entry) => entry.trim() !== '')
    .map((entry) => {
      const [hash = '', author = '', email = '', date = '', subject = ''] = entry
        .replace(/^\n/, '')
        .split('\n');
      return { hash, author, email, date, subject };
    });
}

/**
 * Read `--numstat -z` output (renames as `old\0new`).
 * @param text its output.
 */
export function parseNumstat(
  text: string,
): { path: string; added: number | null; deleted: number | null; orig_path?: string }[] {
  const out: { path: string; added: number | null; deleted: number | null; orig_path?: string }[] =
    [];
  const parts = text.split('\0');
  for (let i = 0; i < parts.length; i += 1) {
    const part = (parts[i] ?? '').replace(/^\n/, '');
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(part);
    if (m === null) continue;
    const added = m[1] === '-' ? null : Number(m[1]);
    const deleted = m[2] === '-' ? null : Number(m[2]);
    if (m[3] === '') {
      const from = parts[i + 1] ?? '';
      const to = parts[i + 2] ?? '';
      i += 2;
      out.push({ path: to, added, deleted, orig_path: from });
    } else {
      out.push({ path: m[3] ?? '', added, deleted });
    }
  }
  return out;
}

const DIFF_FLAGS = ['--no-ext-diff', '--no-textconv', '--no-color', '--ignore-submodules=all'];

/**
 * The revisions of a `ref` parameter, each resolved to a hash.
 * @param session the repository.
 * @param ref the agent's value.
 * @param allowRange whether `A..B` may be given.
 */
async function revisionsOf(
  session: GitSession,
  ref: string,
  allowRange: boolean,
): Promise<string[]> {
  const parsed = parseRange(ref);
  if ('single' in parsed) return [await resolveCommit(session, parsed.single)];
  if (!allowRange) {
    throw new ToolError(
      'INVALID_PARAMS',
      `ref ${JSON.stringify(ref)}: give one revision, not a range`,
    );
  }
  const from = await resolveCommit(session, parsed.from ?? 'HEAD');
  const to = await resolveCommit(session, parsed.to ?? 'HEAD');
  return [`${from}${parsed.symmetric ? '...' : '..'}${to}`];
}

/**
 * The reading tools of the git pack.
 * @param holder the pack's runtime.
 */
export function readTools(holder: RuntimeHolder): Tool[] {
  const gitStatus = defineTool<{ repo?: string }>({
    name: 'git_status',
    description:
      'Show the branch and the changed, staged and untracked files of a git repository in the vault. Returns {branch, commit, upstream, ahead, behind, clean, files: [{path, status, index, worktree, staged}]}.',
    parameters: { repo: REPO_PARAM },
    safety: 'safe',
    effects: READ,
    categories: ['git'],
    readOnly: true,
    idempotent: true,
    timeoutMs: 30_000,
    normalize: (args) => trimmed(args, ['repo']),
    async handler(args, ctx) {
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'read');
      const specs = await pathspecs(ctx.files, holder, session, undefined, 'read');
      const out = await mustGit(
        session,
        [
          'status',
          '--porcelain=v2',
          '--branch',
          '-z',
          '--untracked-files=all',
          '--ignore-submodules=all',
          '--',
          ...specs,
        ],
        `git status in ${session.repo.display} failed`,
      );
      const status = parseStatus(out.stdout);
      return {
        repo: session.repo.display,
        branch: status.branch,
        detached: status.branch === null,
        commit: status.commit,
        upstream: status.upstream,
        ahead: status.ahead,
        behind: status.behind,
        clean: status.files.length === 0,
        files: status.files.slice(0, MAX_STATUS_FILES),
        ...(status.files.length > MAX_STATUS_FILES
          ? { files_not_listed: status.files.length - MAX_STATUS_FILES }
          : {}),
      };
    },
  });

  const gitDiff = defineTool<{
    repo?: string;
    staged?: boolean;
    paths?: string[];
    ref?: string;
    context_lines?: number;
  }>({
    name: 'git_diff',
    description:
      'Show changes in a git repository as a unified diff: the working tree against the index (default), the index against HEAD (staged: true), or against a revision or range (ref: "main", "HEAD~3", "main..feature"). Returns {files: [{path, added, deleted}], diff}; long diffs are cut.',
    parameters: {
      repo: REPO_PARAM,
      staged: {
        type: 'boolean',
        default: false,
        description: 'compare the index with HEAD (or with ref)',
      },
      paths: PATHS_PARAM,
      ref: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        description: 'a revision, or a range A..B / A...B',
      },
      context_lines: { type: 'integer', minimum: 0, maximum: 100, default: 3 },
    },
    safety: 'safe',
    effects: READ,
    categories: ['git'],
    readOnly: true,
    idempotent: true,
    timeoutMs: 30_000,
    maxOutputBytes: 256 * 1024,
    normalize: (args) => trimmed(args, ['repo', 'ref']),
    async handler(args, ctx) {
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'read');
      const revs = args.ref === undefined ? [] : await revisionsOf(session, args.ref, !args.staged);
      const specs = await pathspecs(ctx.files, holder, session, args.paths, 'read');
      const base = ['diff', ...DIFF_FLAGS, ...(args.staged === true ? ['--cached'] : []), ...revs];
      const stat = await mustGit(
        session,
        [...base, '--numstat', '-z', '--', ...specs],
        'git diff failed',
      );
      const patch = await runGit(
        session,
        [...base, `-U${args.context_lines ?? 3}`, '--', ...specs],
        { maxOutputBytes: 512 * 1024 },
      );
      if (patch.exitCode !== 0) throw gitFailure(patch, 'git diff failed');
      const diff = capText(patch.stdout);
      return {
        repo: session.repo.display,
        files: parseNumstat(stat.stdout),
        diff: diff.text,
        truncated: diff.truncated || patch.truncated,
      };
    },
  });

  const gitLog = defineTool<{ repo?: string; limit?: number; paths?: string[]; ref?: string }>({
    name: 'git_log',
    description:
      'List commits of a git repository, newest first: of HEAD, a revision or a range ("main..feature"), optionally only those touching some paths. Returns {commits: [{hash, author, email, date, subject}]}.',
    parameters: {
      repo: REPO_PARAM,
      limit: { type: 'integer', minimum: 1, maximum: 500, default: 20 },
      paths: PATHS_PARAM,
      ref: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        description: 'a revision or a range; default HEAD',
      },
    },
    safety: 'safe',
    effects: READ,
    categories: ['git'],
    readOnly: true,
    idempotent: true,
    timeoutMs: 30_000,
    normalize: (args) => trimmed(args, ['repo', 'ref']),
    async handler(args, ctx) {
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'read');
      const revs = await revisionsOf(session, args.ref ?? 'HEAD', true);
      const specs = await pathspecs(ctx.files, holder, session, args.paths, 'read');
      const out = await mustGit(
        session,
        [
          'log',
          '-z',
          LOG_FORMAT,
          `--max-count=${args.limit ?? 20}`,
          '--no-color',
          ...revs,
          '--',
          ...specs,
        ],
        'git log failed',
      );
      return { repo: session.repo.display, commits: parseLog(out.stdout) };
    },
  });

  const gitShow = defineTool<{ repo?: string; ref?: string }>({
    name: 'git_show',
    description:
      'Show one commit of a git repository: its author, dates, full message, changed files and diff. Returns {commit: {hash, parents, author, email, date, committer, committer_date, subject, body}, files, diff}.',
    parameters: {
      repo: REPO_PARAM,
      ref: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        default: 'HEAD',
        description: 'a branch, tag or commit hash',
      },
    },
    safety: 'safe',
    effects: READ,
    categories: ['git'],
    readOnly: true,
    idempotent: true,
    timeoutMs: 30_000,
    maxOutputBytes: 256 * 1024,
    normalize: (args) => trimmed(args, ['repo', 'ref']),
    async handler(args, ctx) {
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'read');
      const [hash = ''] = await revisionsOf(session, args.ref ?? 'HEAD', false);
      const specs = await pathspecs(ctx.files, holder, session, undefined, 'read');
      const meta = await mustGit(
        session,
        ['show', '-s', '--no-color', '--format=%H%n%P%n%an%n%ae%n%aI%n%cn%n%cI%n%B', hash],
        'git show failed',
      );
      const [
        h = '',
        parents = '',
        author = '',
        email = '',
        date = '',
        committer = '',
        cdate = '',
        ...body
      ] = meta.stdout.split('\n');
      const message = body.join('\n').trimEnd();
      const stat = await mustGit(
        session,
        ['show', ...DIFF_FLAGS, '--format=', '--numstat', '-z', hash, '--', ...specs],
        'git show failed',
      );
      const patch = await runGit(
        session,
        ['show', ...DIFF_FLAGS, '--format=', '--patch', hash, '--', ...specs],
        {
          maxOutputBytes: 512 * 1024,
        },
      );
      if (patch.exitCode !== 0) throw gitFailure(patch, 'git show failed');
      const diff = capText(patch.stdout.replace(/^\n+/, ''));
      return {
        repo: session.repo.display,
        commit: {
          hash: h,
          parents: parents.split(' ').filter((p) => p !== ''),
          author,
          email,
          date,
          committer,
          committer_date: cdate,
          subject: message.split('\n', 1)[0] ?? '',
          body: message,
        },
        files: parseNumstat(stat.stdout),
        diff: diff.text,
        truncated: diff.truncated || patch.truncated,
      };
    },
  });

  const gitBranch = defineTool<{
    repo?: string;
    name?: string;
    create?: boolean;
    start_point?: string;
  }>({
    name: 'git_branch',
    description:
      'List the local branches of a git repository, or create one (create: true, name, optional start_point; it is not checked out). Returns {current, branches: [{name, commit, current, upstream}]} or {created, commit}.',
    parameters: {
      repo: REPO_PARAM,
      name: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        description: 'the new branch (with create: true)',
      },
      create: { type: 'boolean', default: false },
      start_point: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        description: 'where the new branch starts; default HEAD',
      },
    },
    safety: 'cautious',
    effects: (args) =>
      args.create === true
        ? { safety: 'cautious', readOnly: false, idempotent: false, reason: 'creates a branch' }
        : READ,
    categories: ['git'],
    timeoutMs: 30_000,
    normalize: (args) => trimmed(args, ['repo', 'name', 'start_point']),
    async handler(args, ctx) {
      if (args.create !== true) {
        if (args.name !== undefined || args.start_point !== undefined) {
          throw new ToolError(
            'INVALID_PARAMS',
            'name and start_point need create: true (listing takes neither)',
          );
        }
        const session = await sessionFor(
          holder,
          ctx.config,
          ctx.files,
          args.repo,
          ctx.exec,
          'read',
        );
        const out = await mustGit(
          session,
          [
            'for-each-ref',
            '--format=%(refname:short)%00%(objectname)%00%(HEAD)%00%(upstream:short)',
            'refs/heads',
          ],
          'git branch failed',
        );
        const branches = out.stdout
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => {
            const [name = '', commit = '', head = '', upstream = ''] = line.split('\0');
            return {
              name,
              commit,
              current: head === '*',
              upstream: upstream === '' ? null : upstream,
            };
          });
        return {
          repo: session.repo.display,
          current: branches.find((b) => b.current)?.name ?? null,
          branches,
        };
      }
      if (args.name === undefined)
        throw new ToolError('INVALID_PARAMS', 'create: true needs a name');
      const name = checkBranchName(args.name);
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'write');
      const start = await resolveCommit(session, args.start_point ?? 'HEAD');
      const format = await runGit(session, ['check-ref-format', `refs/heads/${name}`]);
      if (format.exitCode !== 0) {
        throw new ToolError('INVALID_PARAMS', `${name} is not a valid branch name for git`);
      }
      await mustGit(
        session,
        ['branch', '--no-track', '--end-of-options', name, start],
        `cannot create branch ${name}`,
      );
      return { repo: session.repo.display, created: name, commit: start };
    },
  });

  return [gitStatus, gitDiff, gitLog, gitShow, gitBranch];
}
