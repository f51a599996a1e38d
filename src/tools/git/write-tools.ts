import { join, relative, sep } from 'node:path';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { Effects, PreviewBasis, Tool, VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { gitShapedFolderIn } from '../../vault/git-folders.ts';
import { softPreview } from '../filesystem/common.ts';
import { readGitConfig } from './config.ts';
import {
  basisOf,
  PATHS_PARAM,
  pathspecs,
  REPO_PARAM,
  REPO_PATHS,
  sessionFor,
  standaloneWriteSession,
  trimmed,
  type RuntimeHolder,
} from './common.ts';
import { parseNumstat } from './parse.ts';
import { branchExists, checkRevision, currentBranch, resolveCommit } from './refs.ts';
import { locateRepo } from './repo.ts';
import { gitFailure, mustGit, openSession, runGit, type GitSession } from './run.ts';

/** How long an effects function may look at a repository. */
const EFFECTS_DEADLINE_MS = 10_000;

// Control characters but tab and line feed have no place in a commit message.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const MESSAGE_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/**
 * Whether the working tree or the index has changes to tracked files.
 * @param session the repository.
 */
async function dirtyFiles(session: GitSession): Promise<string[]> {
  const out = await mustGit(
    session,
    ['status', '--porcelain=v1', '-z', '--untracked-files=no', '--ignore-submodules=all'],
    'git status failed',
  );
  return out.stdout
    .split('\0')
    .filter((e) => e.length > 3)
    .map((e) => e.slice(3));
}

/** Bytes of the list of paths a checkout changes that are checked; past it the checkout is refused. */
const CHECKOUT_LIST_MAX_BYTES = 32 * 1024 * 1024;

/**
 * Refuse a checkout that would write a git folder into the working tree, or write into one that is
 * there: a path it adds or changes that names a `HEAD`, or lies in a folder holding one (the rule
 * the file tools follow, see {@link gitShapedFolderIn}). A branch whose tree holds a bare
 * repository's shape (`HEAD`, `objects/`, `refs/`, `config`, `hooks/`) would otherwise become a
 * repository a person's git uses, with the config and hooks the branch's author wrote. Also refuse
 * one that would add, change or remove anything in a path no tool may change (vaultd's folders,
 * config file and plugins, `.obsidian/`, `Dashboard.md`): a vault kept in git (the obsidian-git
 * plugin commits everything) has all of them in its history, and checking out an old commit
 * would rewrite `Done/`, bring back decided notes in `Approved/` or an older config.
 * @param session the repository.
 * @param target the full hash of the commit checked out.
 * @param files the call's access, which knows the protected paths.
 */
async function checkCheckoutPaths(
  session: GitSession,
  target: string,
  files: VaultAccess,
): Promise<void> {
  const head = await runGit(session, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}']);
  // Every path the checkout adds, changes or removes, with git's letter for what happens to it.
  const argv =
    head.exitCode === 0
      ? ['diff-tree', '-r', '-z', '--name-status', '--no-renames', head.stdout.trim(), target]
      : ['ls-tree', '-r', '-z', '--name-only', target];
  const out = await mustGit(session, argv, 'cannot list the files the checkout changes', {
    maxOutputBytes: CHECKOUT_LIST_MAX_BYTES,
  });
  if (out.truncated) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `the checkout changes more files than vaultd checks (a list over ${CHECKOUT_LIST_MAX_BYTES} bytes); switch in smaller steps or outside vaultd`,
    );
  }
  const fields = out.stdout.split('\0');
  const changes: { path: string; removed: boolean }[] = [];
  if (head.exitCode === 0) {
    for (let i = 0; i + 1 < fields.length; i += 2) {
      changes.push({ path: fields[i + 1] as string, removed: fields[i] === 'D' });
    }
  } else {
    for (const path of fields) if (path !== '') changes.push({ path, removed: false });
  }
  const { worktree } = session.repo;
  const guarded = files.protectedPaths?.write ?? [];
  const known = new Map<string, boolean>();
  for (const { path, removed } of changes) {
    if (path === '') continue;
    const absolute = join(worktree, ...path.split('/'));
    // git writes no file through a link in the tree, so the path as named is where it writes.
    const owned = guarded.find((p) => isInside(absolute, p));
    if (owned !== undefined) {
      throw new ToolError(
        'PERMISSION_DENIED',
        `the checkout would ${removed ? 'remove' : 'write'} ${path}${owned === absolute ? '' : `, in ${relative(worktree, owned).split(sep).join('/')}`}, which belongs to vaultd (or the editor) and no tool may change; nothing was checked out`,
        { data: { reason: 'protected' } },
      );
    }
    if (removed) continue;
    const shaped = await gitShapedFolderIn(absolute, worktree, known);
    if (shaped === undefined) continue;
    throw new ToolError(
      'PERMISSION_DENIED',
      shaped.makesHead
        ? `the checkout would write ${path}, a HEAD that makes ${shaped.shown} a git folder: git takes any folder holding HEAD (with objects/ and refs/) for a repository and runs its config and hooks; nothing was checked out`
        : `the checkout would write ${path} into ${shaped.shown}, a git folder (it holds HEAD), whose config and hooks git runs; nothing was checked out`,
      { data: { reason: 'git_folder' } },
    );
  }
}

/**
 * The identity commits are made with, as git's environment.
 * @param config the pack's config section.
 */
function identityEnv(config: Readonly<Record<string, unknown>>): Record<string, string> {
  const { author } = readGitConfig(config);
  return {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: author.name,
    GIT_COMMITTER_EMAIL: author.email,
  };
}

/**
 * Whether a repository is one of the configured scratch repositories.
 * @param files the tool's file access.
 * @param config the pack's config section.
 * @param worktree the repository's working tree (real path).
 */
async function isScratch(
  files: VaultAccess,
  config: Readonly<Record<string, unknown>>,
  worktree: string,
): Promise<boolean> {
  for (const path of readGitConfig(config).scratchRepos) {
    // The entry names the repository's own folder, not a folder inside it.
    const named = await files.resolve(path, 'write').catch(() => undefined);
    if (named?.path === worktree) return true;
  }
  return false;
}

/**
 * The tools of the git pack that change a repository in place.
 * @param holder the pack's runtime.
 */
export function writeTools(holder: RuntimeHolder): Tool[] {
  type CheckoutArgs = { repo?: string; ref: string };
  const gitCheckout = defineTool<CheckoutArgs>({
    name: 'git_checkout',
    pathParameters: ['repo'],
    description:
      'Switch a git repository to a branch (or to a commit, detached). Uncommitted changes are kept; git refuses when they would be overwritten. Cautious; needs approval when the tree has uncommitted changes. Returns {branch, commit, detached}.',
    parameters: {
      repo: REPO_PARAM,
      ref: {
        type: 'string',
        minLength: 1,
        maxLength: 300,
        description: 'a branch, tag or commit hash',
      },
    },
    required: ['ref'],
    safety: 'dangerous',
    async effects(args, facts): Promise<Effects> {
      const signal = AbortSignal.timeout(EFFECTS_DEADLINE_MS);
      const session = await standaloneWriteSession(holder, facts, args.repo, signal);
      const dirty = await dirtyFiles(session);
      return dirty.length > 0
        ? {
            safety: 'dangerous',
            readOnly: false,
            idempotent: false,
            reason: `the working tree has uncommitted changes (${dirty.length} file${dirty.length === 1 ? '' : 's'})`,
          }
        : { safety: 'cautious', readOnly: false, idempotent: false };
    },
    categories: ['git'],
    timeoutMs: 60_000,
    normalize: (args) => trimmed(args, ['repo', 'ref']),
    // A switch that will be refused (a ref naming no commit, a repository out of reach) says so to
    // the human, instead of "no preview".
    preview: softPreview(async (args: CheckoutArgs, ctx) => {
      const session = await standaloneWriteSession(holder, ctx, args.repo, ctx.signal);
      await resolveCommit(session, checkRevision(args.ref));
      const from = (await currentBranch(session)) ?? '(detached HEAD)';
      const dirty = await dirtyFiles(session);
      const lines = [
        `Switch ${session.repo.display} from ${from} to ${args.ref}.`,
        dirty.length === 0
          ? 'The working tree is clean.'
          : `Uncommitted changes (kept, or git refuses if the switch would overwrite them):\n${dirty
              .slice(0, 50)
              .map((f) => `  ${f}`)
              .join('\n')}`,
      ];
      const basis: PreviewBasis[] = [
        await basisOf(join(session.repo.gitDir, 'index')),
        await basisOf(join(session.repo.gitDir, 'HEAD')),
      ];
      return { kind: 'text', text: lines.join('\n'), basis };
    }),
    async handler(args, ctx) {
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'write');
      const ref = checkRevision(args.ref);
      const isBranch =
        /^[A-Za-z0-9_][A-Za-z0-9._/-]*$/.test(ref) && (await branchExists(session, ref));
      const target = await resolveCommit(session, isBranch ? `refs/heads/${ref}` : ref);
      await checkCheckoutPaths(session, target, ctx.files);
      const argv = isBranch
        ? ['switch', '--no-guess', '--no-recurse-submodules', '--quiet', '--end-of-options', ref]
        : ['switch', '--detach', '--no-recurse-submodules', '--quiet', '--end-of-options', target];
      const out = await runGit(session, argv);
      if (out.exitCode !== 0) throw gitFailure(out, `cannot check out ${ref}`, true);
      const commit = await resolveCommit(session, 'HEAD');
      const branch = (await currentBranch(session)) ?? null;
      return { repo: session.repo.display, branch, commit, detached: branch === null };
    },
  });

  const gitAdd = defineTool<{ repo?: string; paths: string[] }>({
    name: 'git_add',
    pathParameters: ['repo'],
    repoPathParameters: REPO_PATHS,
    description:
      'Stage files of a git repository for the next commit (new, changed and deleted files under the given paths). Returns {staged: [{path, added, deleted}]}: everything staged now.',
    parameters: { repo: REPO_PARAM, paths: { ...PATHS_PARAM, minItems: 1 } },
    required: ['paths'],
    safety: 'cautious',
    categories: ['git'],
    readOnly: false,
    idempotent: true,
    timeoutMs: 60_000,
    normalize: (args) => trimmed(args, ['repo']),
    async handler(args, ctx) {
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'write');
      const specs = await pathspecs(ctx.files, holder, session, args.paths, 'write');
      const out = await runGit(session, ['add', '--', ...specs]);
      if (out.exitCode !== 0) throw gitFailure(out, 'git add failed', true);
      const staged = await mustGit(
        session,
        ['diff', '--cached', '--no-ext-diff', '--no-textconv', '--numstat', '-z'],
        'git diff failed',
      );
      return { repo: session.repo.display, staged: parseNumstat(staged.stdout) };
    },
  });

  type CommitArgs = { repo?: string; message: string; paths?: string[] };
  const gitCommit = defineTool<CommitArgs>({
    name: 'git_commit',
    pathParameters: ['repo'],
    repoPathParameters: REPO_PATHS,
    description:
      'Commit what is staged in a git repository (or, with paths, the current content of just those tracked paths) with a message. Needs approval unless the repository is a configured scratch repository. Returns {commit, branch, subject, files}.',
    parameters: {
      repo: REPO_PARAM,
      message: {
        type: 'string',
        minLength: 1,
        maxLength: 20_000,
        description: 'the commit message',
      },
      paths: PATHS_PARAM,
    },
    required: ['message'],
    safety: 'dangerous',
    async effects(args, facts): Promise<Effects> {
      const repo = await locateRepo(facts.files, args.repo, 'write');
      return (await isScratch(facts.files, facts.config, repo.worktree))
        ? { safety: 'cautious', readOnly: false, idempotent: false, reason: 'a scratch repository' }
        : { safety: 'dangerous', readOnly: false, idempotent: false };
    },
    categories: ['git'],
    timeoutMs: 60_000,
    normalize(args) {
      const out = trimmed(args, ['repo']);
      const message = out.message.normalize('NFC').replace(/\r\n/g, '\n').trim();
      if (message === '' || MESSAGE_CONTROL.test(message)) {
        throw new ToolError(
          'INVALID_PARAMS',
          'message must be text (no control characters) and not empty',
        );
      }
      return { ...out, message };
    },
    preview: softPreview(async (args: CommitArgs, ctx) => {
      const session = await standaloneWriteSession(holder, ctx, args.repo, ctx.signal);
      const specs =
        args.paths === undefined
          ? []
          : await pathspecs(ctx.files, holder, session, args.paths, 'write');
      const hasHead =
        (await runGit(session, ['rev-parse', '--verify', '--quiet', 'HEAD'])).exitCode === 0;
      const against = args.paths === undefined ? ['--cached'] : hasHead ? ['HEAD'] : ['--cached'];
      const stat = await runGit(session, [
        'diff',
        '--no-ext-diff',
        '--no-textconv',
        '--no-color',
        '--stat=100',
        ...against,
        '--',
        ...specs,
      ]);
      const { author } = readGitConfig(ctx.config);
      const branch = (await currentBranch(session)) ?? '(detached HEAD)';
      const text = [
        `Commit to ${branch} in ${session.repo.display} as ${author.name} <${author.email}>:`,
        '',
        ...args.message.split('\n').map((l) => `    ${l}`),
        '',
        stat.stdout.trim() === ''
          ? '(nothing staged: the commit will fail)'
          : stat.stdout.trimEnd(),
      ].join('\n');
      // HEAD names the branch the commit lands on: moved after the preview, the human is asked again.
      const basis: PreviewBasis[] = [
        await basisOf(join(session.repo.gitDir, 'index')),
        await basisOf(join(session.repo.gitDir, 'HEAD')),
      ];
      for (const spec of specs) {
        if (!spec.startsWith(':(literal)')) continue;
        basis.push(await basisOf(join(session.repo.worktree, spec.slice(':(literal)'.length))));
      }
      return { kind: 'text', text, basis };
    }),
    async handler(args, ctx) {
      const repo = await locateRepo(ctx.files, args.repo, 'write');
      if (
        ctx.effects?.safety !== 'dangerous' &&
        !(await isScratch(ctx.files, ctx.config, repo.worktree))
      ) {
        // Allowed without a human because the gate found a scratch repository; the repository
        // found now is another one (its .git moved, a link changed): never commit there unasked.
        throw new ToolError(
          'PERMISSION_DENIED',
          `${repo.display} is not a scratch repository: the repository changed after the call was allowed without approval; write the call again`,
        );
      }
      const session = await openSession(
        repo,
        readGitConfig(ctx.config),
        holder.get().home,
        ctx.exec,
      );
      const specs =
        args.paths === undefined
          ? []
          : await pathspecs(ctx.files, holder, session, args.paths, 'write');
      const config = readGitConfig(ctx.config);
      const argv = [
        'commit',
        '--quiet',
        '--file=-',
        '--cleanup=whitespace',
        ...(config.runHooks ? [] : ['--no-verify']),
        ...(config.signCommits ? [] : ['--no-gpg-sign']),
        ...(specs.length === 0 ? [] : ['--', ...specs]),
      ];
      const out = await runGit(session, argv, {
        input: `${args.message}\n`,
        env: identityEnv(ctx.config),
      });
      if (out.exitCode !== 0) {
        const error = gitFailure(out, `cannot commit in ${session.repo.display}`, false);
        const reason = (error.data as { reason: string }).reason;
        // Nothing to commit and unmerged files are refusals before anything was written.
        if (reason !== 'nothing_to_commit' && reason !== 'merge_conflict') {
          throw gitFailure(out, `cannot commit in ${session.repo.display}`, true);
        }
        throw error;
      }
      const commit = await resolveCommit(session, 'HEAD');
      const files = await mustGit(
        session,
        ['show', '--no-ext-diff', '--no-textconv', '--format=', '--numstat', '-z', commit],
        'git show failed',
      );
      return {
        repo: session.repo.display,
        commit,
        branch: (await currentBranch(session)) ?? null,
        subject: args.message.split('\n', 1)[0] ?? '',
        files: parseNumstat(files.stdout),
      };
    },
  });

  return [gitCheckout, gitAdd, gitCommit] as unknown as Tool[];
}
