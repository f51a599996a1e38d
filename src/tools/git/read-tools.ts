import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { Tool } from '../../protocol/types.ts';
import {
  capText,
  PATHS_PARAM,
  pathspecs,
  REPO_PARAM,
  REPO_PATHS,
  sessionFor,
  trimmed,
  type RuntimeHolder,
} from './common.ts';
import { checkBranchName, parseRange, resolveCommit } from './refs.ts';
import { LOG_FORMAT, parseLog, parseNumstat, parseStatus } from './parse.ts';
import { gitFailure, mustGit, runGit, type GitSession } from './run.ts';

const READ = { safety: 'safe', readOnly: true, idempotent: true } as const;
/** A revision (or range) parameter; each tool gives its own description. */
const REF = { type: 'string', minLength: 1, maxLength: 300 } as const;
/** What every reading tool of the pack declares. */
const READ_TOOL = { ...READ, effects: READ, categories: ['git'], timeoutMs: 30_000 } as const;
/** Files listed by git_status at most. */
const MAX_STATUS_FILES = 1000;

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
    pathParameters: ['repo'],
    description:
      'Show the branch and the changed, staged and untracked files of a git repository in the vault. Returns {branch, commit, upstream, ahead, behind, clean, files: [{path, status, index, worktree, staged}]}.',
    parameters: { repo: REPO_PARAM },
    ...READ_TOOL,
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
    pathParameters: ['repo'],
    repoPathParameters: REPO_PATHS,
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
        ...REF,
        description: 'a revision, or a range A..B / A...B',
      },
      context_lines: { type: 'integer', minimum: 0, maximum: 100, default: 3 },
    },
    ...READ_TOOL,
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
    pathParameters: ['repo'],
    repoPathParameters: REPO_PATHS,
    description:
      'List commits of a git repository, newest first: of HEAD, a revision or a range ("main..feature"), optionally only those touching some paths. Returns {commits: [{hash, author, email, date, subject}]}.',
    parameters: {
      repo: REPO_PARAM,
      limit: { type: 'integer', minimum: 1, maximum: 500, default: 20 },
      paths: PATHS_PARAM,
      ref: {
        ...REF,
        description: 'a revision or a range; default HEAD',
      },
    },
    ...READ_TOOL,
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
    pathParameters: ['repo'],
    description:
      'Show one commit of a git repository: its author, dates, full message, changed files and diff. Returns {commit: {hash, parents, author, email, date, committer, committer_date, subject, body}, files, diff}.',
    parameters: {
      repo: REPO_PARAM,
      ref: {
        ...REF,
        default: 'HEAD',
        description: 'a branch, tag or commit hash',
      },
    },
    ...READ_TOOL,
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
    pathParameters: ['repo'],
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
        ...REF,
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
