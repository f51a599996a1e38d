import { lstat, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { PreviewBasis, Tool, VaultAccess } from '../../protocol/types.ts';
import { folderIdentity } from '../../vault/folder-identity.ts';
import { errnoCode } from '../../vault/fs-errors.ts';
import { softPreview } from '../filesystem/common.ts';
import { readGitConfig } from './config.ts';
import {
  basisOf,
  branchRefFiles,
  REPO_PARAM,
  sessionFor,
  standaloneWriteSession,
  trimmed,
  type RuntimeHolder,
} from './common.ts';
import { LOG_FORMAT, parseLog, type LogCommit } from './parse.ts';
import {
  branchExists,
  checkBranchName,
  checkRemote,
  currentBranch,
  resolveCommit,
} from './refs.ts';
import {
  gitFailure,
  hideCredentials,
  mustGit,
  repoConfigFiles,
  runGit,
  type GitSession,
} from './run.ts';

/**
 * Settings of the receiving side of a local push, which runs as vaultd with the remote
 * repository's own config (git clears `GIT_CONFIG_*` for the local transport, so only this
 * command line reaches it; `git -c` passes them on to the processes it starts): no hooks, no
 * checkout on push, no `proc-receive`, no alternate-refs command (`true` prints no refs), no
 * automatic gc or maintenance, the system's signature programs. The command is run by a shell:
 * every value here is a plain word.
 */
const RECEIVE_OVERRIDES: readonly (readonly [string, string])[] = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.alternateRefsCommand', 'true'],
  ['core.alternateRefsPrefixes', ''],
  ['receive.denyCurrentBranch', 'refuse'],
  ['receive.procReceiveRefs', ''],
  ['receive.autogc', 'false'],
  ['receive.updateServerInfo', 'false'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
  ['gpg.program', 'gpg'],
  ['gpg.ssh.program', 'ssh-keygen'],
  ['gpg.x509.program', 'gpgsm'],
];

/** The receiving program of a local push, with {@link RECEIVE_OVERRIDES}. */
const LOCAL_RECEIVE_PACK = [
  'git',
  ...RECEIVE_OVERRIDES.map(([key, value]) => `-c ${key}=${value}`),
  'receive-pack',
].join(' ');

/** Commits a push preview lists at most. */
const PREVIEW_COMMITS = 50;

interface PushPlan {
  readonly remote: string;
  readonly branch: string;
  readonly commit: string;
  /** The remote's push URLs, without credentials. */
  readonly urls: readonly string[];
  /**
   * The receiving program, given on the command line: the remote's config may name several
   * (the first wins), so only `--receive-pack` overrides them all.
   */
  readonly receivePack: string;
  /** The local repositories pushed to (none over the network). */
  readonly locals: readonly LocalRemote[];
  /** Commits on the branch that the remote-tracking branch lacks (newest first, capped). */
  readonly commits: readonly LogCommit[];
  readonly more: number;
  readonly tracking: string | undefined;
}

/**
 * Where a push goes: a local repository (a path or `file://`), or a network URL; transport
 * helpers (`ext::`, `fd::`, `<helper>::`) are refused.
 * @param url a push URL as git reports it (insteadOf applied).
 */
function localPathOf(url: string): string | undefined {
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url)) {
    throw new ToolError(
      'PERMISSION_DENIED',
      `the remote URL ${hideCredentials(url)} uses a transport helper; vaultd pushes over file, ssh and http(s) only`,
    );
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'file') {
    // git ignores a host: `file://x/srv/r.git` pushes to /srv/r.git, which a check of the text
    // after `file://` took for `x/srv/r.git` inside the working tree (review finding).
    const rest = url.slice('file://'.length);
    if (!rest.startsWith('/')) {
      throw new ToolError(
        'PERMISSION_DENIED',
        `the remote URL ${hideCredentials(url)} names a host in a file:// URL; give file:///path or the path`,
      );
    }
    try {
      return decodeURIComponent(rest);
    } catch {
      throw new ToolError(
        'INVALID_PARAMS',
        `the remote URL ${hideCredentials(url)} holds a malformed %-escape`,
      );
    }
  }
  if (scheme !== undefined) {
    if (!['ssh', 'git+ssh', 'ssh+git', 'http', 'https'].includes(scheme)) {
      throw new ToolError(
        'PERMISSION_DENIED',
        `the remote URL ${hideCredentials(url)} uses ${scheme}, which vaultd does not push over`,
      );
    }
    return undefined;
  }
  // scp-like `host:path` has a colon before any slash; everything else is a local path.
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  if (colon > 0 && (slash === -1 || colon < slash)) return undefined;
  if (url.startsWith('~')) {
    // git reads `~/x` and `~user/x` as home folders (the pack's own HOME, another user's).
    throw new ToolError(
      'PERMISSION_DENIED',
      `the remote ${hideCredentials(url)} starts with ~, a home folder; give the repository's path`,
    );
  }
  return url;
}

/**
 * Whether a folder looks like a git folder as git tells one (`HEAD`, `objects/`, `refs/`).
 * @param path the folder.
 */
async function isGitFolder(path: string): Promise<boolean> {
  try {
    const [, objects, refs] = await Promise.all(
      ['HEAD', 'objects', 'refs'].map((name) => stat(join(path, name))),
    );
    return objects?.isDirectory() === true && refs?.isDirectory() === true;
  } catch {
    return false;
  }
}

/**
 * The git folder a local push to `path` opens, or a refusal. git's receive-pack tries
 * `<path>/.git`, `<path>`, `<path>.git/.git` and `<path>.git` in turn, following links and `.git`
 * files; vaultd accepts only the first two, and `<path>/.git` only as a real folder, so the
 * folder it checks is the one git opens: a missing `<path>` next to a link `<path>.git` out of the
 * roots, or a plain folder holding a link `.git`, pushed outside them (review finding).
 * @param path the remote's absolute path.
 * @param url its URL, for messages.
 */
async function localGitFolder(path: string, url: string): Promise<string> {
  const dotGit = join(path, '.git');
  let inside: Stats | undefined;
  try {
    inside = await lstat(dotGit);
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT' && errnoCode(error) !== 'ENOTDIR') throw error;
  }
  if (inside !== undefined) {
    if (!inside.isDirectory()) {
      throw new ToolError(
        'PERMISSION_DENIED',
        `the remote ${hideCredentials(url)} holds a .git that is ${inside.isSymbolicLink() ? 'a link' : 'not a folder'}, which git would follow; vaultd pushes only to a repository's own folder`,
      );
    }
    if (await isGitFolder(dotGit)) return dotGit;
  } else if (await isGitFolder(path)) {
    return path;
  }
  throw new ToolError(
    'INVALID_PARAMS',
    `the remote ${hideCredentials(url)} is not a git repository (git would look for ${hideCredentials(url)}.git next, which vaultd does not follow)`,
  );
}

/** A local repository a push goes to. */
interface LocalRemote {
  /** The path the URL names (absolute, links not followed). */
  readonly absolute: string;
  /** The git folder git opens there: `absolute`, or its `.git` folder. */
  readonly gitFolder: string;
  /** Where that leads now, as an agent would name it. */
  readonly shown: string;
}

/**
 * Check a local remote: a repository inside the roots, in a writable root, and not in vaultd's
 * folders nor inside another repository's git folder. The remote is itself a git folder (a bare
 * repository holds `HEAD`), which the file access refuses for writes: git writes it, through
 * receive-pack, so what is checked for writing is the folder it is in.
 * @param files the tool's file access.
 * @param absolute the remote's path.
 * @param url its URL, for messages.
 * @returns where it leads now, as an agent would name it.
 */
async function checkLocalRemote(
  files: VaultAccess,
  absolute: string,
  url: string,
): Promise<string> {
  const target = await files.resolve(absolute, 'read');
  if (!target.root.writable) {
    throw new ToolError(
      'PERMISSION_DENIED',
      `the remote ${hideCredentials(url)} is in ${target.root.name}, which is read-only`,
    );
  }
  if (target.relative !== '.') await files.resolve(dirname(target.path), 'write');
  return files.display(target);
}

/**
 * Work out a push: branch, remote, URLs (a local one must be inside the roots) and the commits
 * that would be sent.
 * @param session the repository.
 * @param files the tool's file access.
 * @param args the call's arguments.
 */
async function planPush(
  session: GitSession,
  files: VaultAccess,
  args: { remote?: string; branch?: string },
): Promise<PushPlan> {
  const branch =
    args.branch === undefined
      ? await currentBranch(session)
      : checkBranchName(args.branch, 'branch');
  if (branch === undefined) {
    throw new ToolError('INVALID_PARAMS', 'HEAD is detached: name the branch to push');
  }
  if (!(await branchExists(session, branch))) {
    throw new ToolError('INVALID_PARAMS', `${session.repo.display} has no branch ${branch}`, {
      data: { reason: 'unknown_ref' },
    });
  }
  let remoteName = args.remote;
  if (remoteName === undefined) {
    const configured = await runGit(session, ['config', '--get', `branch.${branch}.remote`]);
    remoteName = configured.exitCode === 0 ? configured.stdout.trim() : 'origin';
  }
  const remote = await checkRemote(session, remoteName);
  const urlsOut = await mustGit(
    session,
    ['remote', 'get-url', '--push', '--all', remote],
    `cannot read the URL of ${remote}`,
  );
  const urls = urlsOut.stdout.split('\n').filter((u) => u !== '');
  const locals: LocalRemote[] = [];
  for (const url of urls) {
    const path = localPathOf(url);
    if (path === undefined) continue;
    // git reads a relative path from where it runs: the working tree.
    const absolute = isAbsolute(path) ? resolve(path) : resolve(session.repo.worktree, path);
    // Inside the roots first: nothing outside them is looked into.
    await files.resolve(absolute, 'read');
    const gitFolder = await localGitFolder(absolute, url);
    locals.push({ absolute, gitFolder, shown: await checkLocalRemote(files, gitFolder, url) });
  }
  // The receiving side of a local push runs on this machine: its program is fixed, without the
  // remote repository's hooks or checkout-on-push; over the network it is git's default.
  const receive = locals.length > 0 ? LOCAL_RECEIVE_PACK : 'git-receive-pack';
  const commit = await resolveCommit(session, `refs/heads/${branch}`);
  const trackingRef = `refs/remotes/${remote}/${branch}`;
  const tracking =
    (await runGit(session, ['show-ref', '--verify', '--quiet', trackingRef])).exitCode === 0
      ? trackingRef
      : undefined;
  const not = tracking === undefined ? [`--remotes=${remote}`] : [tracking];
  const log = await mustGit(
    session,
    ['log', '-z', LOG_FORMAT, `--max-count=${PREVIEW_COMMITS + 1}`, commit, '--not', ...not, '--'],
    'git log failed',
  );
  const commits = parseLog(log.stdout);
  const countOut = await runGit(session, ['rev-list', '--count', commit, '--not', ...not, '--']);
  const total = Number(countOut.stdout.trim()) || commits.length;
  return {
    remote,
    branch,
    commit,
    urls: urls.map(hideCredentials),
    receivePack: receive,
    locals,
    commits: commits.slice(0, PREVIEW_COMMITS),
    more: Math.max(0, total - PREVIEW_COMMITS),
    tracking,
  };
}

/**
 * The git_push tool.
 * @param holder the pack's runtime.
 */
export function pushTool(holder: RuntimeHolder): Tool {
  type PushArgs = { repo?: string; remote?: string; branch?: string; force?: boolean };
  return defineTool<PushArgs>({
    name: 'git_push',
    pathParameters: ['repo'],
    description:
      'Push a local branch of a git repository to a remote (same branch name there). Always needs approval; the approval shows the commits that would be pushed. Never forces unless the operator allows it and force: true is given. Returns {remote, branch, commit, pushed}.',
    parameters: {
      repo: REPO_PARAM,
      remote: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: "the remote's name; default the branch's remote, else origin",
      },
      branch: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        description: 'the local branch; default the current one',
      },
      force: {
        type: 'boolean',
        default: false,
        description: 'force with lease (only when the operator allows it)',
      },
    },
    safety: 'dangerous',
    categories: ['git'],
    readOnly: false,
    idempotent: false,
    openWorld: true,
    timeoutMs: 120_000,
    normalize: (args) => trimmed(args, ['repo', 'remote', 'branch']),
    // A push that will be refused (an unknown remote, force while force pushes are off) says so
    // to the human, instead of "no preview".
    preview: softPreview(async (args: PushArgs, ctx) => {
      refuseForce(args, readGitConfig(ctx.config).allowForcePush);
      const session = await standaloneWriteSession(holder, ctx, args.repo, ctx.signal);
      const plan = await planPush(session, ctx.files, args);
      const lines = [
        `Push ${plan.branch} (${plan.commit.slice(0, 12)}) of ${session.repo.display} to ${plan.remote} (${plan.urls.join(', ')})${args.force === true ? ' WITH FORCE (lease)' : ''}.`,
        plan.tracking === undefined
          ? `The remote has no ${plan.branch} as far as this repository knows; commits not on any branch of ${plan.remote}:`
          : `Commits not on ${plan.remote}/${plan.branch} as of the last push:`,
        ...(plan.commits.length === 0
          ? ['  (none: the remote is up to date, or the push removes commits there)']
          : plan.commits.map(
              (c) => `  ${c.hash.slice(0, 12)} ${c.date.slice(0, 10)} ${c.author}: ${c.subject}`,
            )),
        ...(plan.more > 0 ? [`  … and ${plan.more} more`] : []),
        ...plan.locals.map((l) => `Local repository pushed to: ${l.shown}`),
      ];
      const basis: PreviewBasis[] = [];
      for (const file of branchRefFiles(session.repo, plan.branch)) basis.push(await basisOf(file));
      // Without `branch` the push takes the current one: HEAD switched to another branch after the
      // preview (a checkout in a clean tree runs without a human) pushed a branch nobody saw.
      if (args.branch === undefined) basis.push(await basisOf(join(session.repo.gitDir, 'HEAD')));
      // Where the push goes is read from the config (url, pushurl, insteadOf, the branch's
      // remote): a config changed after the preview asks the human again.
      for (const file of repoConfigFiles(session.repo)) basis.push(await basisOf(file));
      // A local remote is the folder its path leads to now: replaced, moved away or swapped for
      // a link after the preview, the push would go to another repository than the one approved.
      // Its `.git` too: one made there after the preview is where git would push.
      for (const local of plan.locals) {
        for (const path of [local.absolute, join(local.absolute, '.git')]) {
          basis.push({ path, sha256: await folderIdentity(path), of: 'folder' });
        }
      }
      return { kind: 'text', text: lines.join('\n'), basis };
    }),
    async handler(args, ctx) {
      const config = readGitConfig(ctx.config);
      refuseForce(args, config.allowForcePush);
      const session = await sessionFor(holder, ctx.config, ctx.files, args.repo, ctx.exec, 'write');
      const plan = await planPush(session, ctx.files, args);
      const refspec = `refs/heads/${plan.branch}:refs/heads/${plan.branch}`;
      const argv = [
        'push',
        '--porcelain',
        '--no-recurse-submodules',
        ...(config.runHooks ? [] : ['--no-verify']),
        ...(args.force === true ? [`--force-with-lease=refs/heads/${plan.branch}`] : []),
        `--receive-pack=${plan.receivePack}`,
        '--end-of-options',
        plan.remote,
        refspec,
      ];
      const out = await runGit(session, argv);
      if (out.exitCode !== 0) {
        throw gitFailure(out, `cannot push ${plan.branch} to ${plan.remote}`, true);
      }
      const upToDate = /^=\t/m.test(out.stdout);
      return {
        repo: session.repo.display,
        remote: plan.remote,
        urls: plan.urls,
        branch: plan.branch,
        commit: plan.commit,
        up_to_date: upToDate,
        pushed: upToDate ? [] : plan.commits,
      };
    },
  }) as unknown as Tool;
}

/** Refuse `force: true` unless the operator allows force pushes. */
function refuseForce(args: { force?: boolean }, allowed: boolean): void {
  if (args.force === true && !allowed) {
    throw new ToolError(
      'PERMISSION_DENIED',
      'force pushes are off (tools.git.allow_force_push); push without force',
    );
  }
}
