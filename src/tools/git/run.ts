import { dirname, join } from 'node:path';
import { replaceUserInfo } from '../../protocol/url-userinfo.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { ExecOptions, ExecResult } from '../../protocol/types.ts';
import { GIT_PATH, type GitConfig } from './config.ts';
import type { Repo } from './repo.ts';
import { errnoCode } from '../../vault/fs-errors.ts';
import { readRegularFile } from '../../vault/read-regular.ts';

/** How a git process is started: a call's `ctx.exec`, or a runner of the pack's own. */
export type Exec = (
  file: string,
  args: readonly string[],
  options?: ExecOptions,
) => Promise<ExecResult>;

/** One repository, ready for git commands with every setting that runs a program neutralised. */
export interface GitSession {
  readonly repo: Repo;
  readonly config: GitConfig;
  readonly exec: Exec;
  /** The environment of every git process of the session. */
  readonly env: Readonly<Record<string, string>>;
}

/** Options of {@link runGit}. */
export interface RunOptions {
  readonly input?: string;
  readonly maxOutputBytes?: number;
  /** Variables added to the session's environment (the commit identity). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Bytes of a repository's config read to find the settings that run programs. */
const CONFIG_MAX_BYTES = 512 * 1024;

/** Protocols a push may use; every other transport, `ext::` and `fd::` included, is refused. */
const ALLOWED_PROTOCOLS = ['file', 'http', 'https', 'ssh'];

/**
 * Settings that make git run a program, or that reach into other repositories, overridden for
 * every command (command-line config wins over the repository's). Keys the repository names
 * itself (filters, diff drivers, credential helpers per URL) are added per session.
 */
function fixedOverrides(config: GitConfig): [string, string][] {
  const protocols: [string, string][] = ALLOWED_PROTOCOLS.map((p) => [
    `protocol.${p}.allow`,
    'always',
  ]);
  const fixed: [string, string][] = [
    ['core.fsmonitor', 'false'],
    ['core.pager', 'cat'],
    ['core.editor', 'true'],
    ['sequence.editor', 'true'],
    ['core.sshCommand', config.sshCommand],
    ['diff.external', ''],
    ['log.showSignature', 'false'],
    ['commit.gpgSign', config.signCommits ? 'true' : 'false'],
    ['tag.gpgSign', 'false'],
    ['push.gpgSign', 'false'],
    ['gpg.program', 'gpg'],
    ['gpg.format', 'openpgp'],
    ['gpg.ssh.program', 'ssh-keygen'],
    ['gpg.x509.program', 'gpgsm'],
    ['gc.auto', '0'],
    ['maintenance.auto', 'false'],
    ['submodule.recurse', 'false'],
    ['push.recurseSubmodules', 'no'],
    // A negotiating push starts a fetch, whose upload-pack the repository's config may name for
    // the URL (`remote.<url>.uploadpack`, a shell command): it ran as vaultd (review finding).
    ['push.negotiate', 'false'],
    ['fetch.recurseSubmodules', 'false'],
    ['diff.ignoreSubmodules', 'all'],
    ['status.submoduleSummary', 'false'],
    ['credential.helper', ''],
    ['http.cookieFile', ''],
    ['http.saveCookies', 'false'],
    ['color.ui', 'false'],
    ['core.quotePath', 'false'],
    ['protocol.allow', 'never'],
    ...protocols,
    ['protocol.ext.allow', 'never'],
    ['protocol.fd.allow', 'never'],
  ];
  if (!config.runHooks) fixed.push(['core.hooksPath', '/dev/null']);
  return fixed;
}

/**
 * The overrides for settings the repository's own config names: every filter driver's `clean`,
 * `smudge` and `process` emptied (the content passes unchanged), every diff driver's `textconv`
 * and `command`, every merge driver, every credential helper for a URL, every cookie file, every
 * remote's `uploadpack` and `receivepack` (git's own programs instead), and every protocol allowed
 * beyond {@link ALLOWED_PROTOCOLS}.
 * @param keys the keys of the repository's config (as `git config --list` prints them).
 */
export function repoOverrides(keys: Iterable<string>): [string, string][] {
  const out = new Map<string, string>();
  for (const key of keys) {
    const lower = key.toLowerCase();
    const dot = key.lastIndexOf('.');
    const section = lower.slice(0, lower.indexOf('.'));
    const name = lower.slice(dot + 1);
    const sub = key.slice(section.length + 1, dot);
    if (section === 'filter' && ['clean', 'smudge', 'process'].includes(name)) {
      out.set(key, '');
      out.set(`filter.${sub}.required`, 'false');
    } else if (section === 'diff' && sub !== '' && ['textconv', 'command'].includes(name)) {
      out.set(key, '');
    } else if (section === 'merge' && sub !== '' && name === 'driver') {
      out.set(key, '');
    } else if (section === 'credential' && sub !== '' && name === 'helper') {
      out.set(key, '');
    } else if (section === 'protocol' && sub !== '' && name === 'allow') {
      out.set(key, ALLOWED_PROTOCOLS.includes(sub.toLowerCase()) ? 'always' : 'never');
    } else if (section === 'http' && name === 'cookiefile') {
      // A cookie jar is a file curl reads and may write anywhere; per-URL keys win over ours.
      out.set(key, '');
    } else if (section === 'http' && name === 'savecookies') {
      out.set(key, 'false');
    } else if (section === 'remote' && sub !== '' && name === 'uploadpack') {
      // A shell command run for a fetch from that remote (a URL names one too).
      out.set(key, 'git-upload-pack');
    } else if (section === 'remote' && sub !== '' && name === 'receivepack') {
      out.set(key, 'git-receive-pack');
    }
  }
  return [...out];
}

/**
 * The environment of every git process: nothing inherited, no system or global config, a HOME
 * with nothing in it, no prompt, pager or editor, no optional locks, C messages.
 * @param config the pack's config.
 * @param home an empty folder of the pack's own.
 * @param repo the repository (its parent bounds repository discovery).
 * @param overrides config overrides, passed as `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>`.
 */
export function gitEnv(
  config: GitConfig,
  home: string,
  repo: Repo,
  overrides: readonly [string, string][],
): Record<string, string> {
  const env: Record<string, string> = {
    PATH: GIT_PATH,
    HOME: home,
    XDG_CONFIG_HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    SSH_ASKPASS_REQUIRE: 'never',
    GIT_SSH_COMMAND: config.sshCommand,
    GIT_PAGER: 'cat',
    PAGER: 'cat',
    GIT_EDITOR: 'true',
    GIT_SEQUENCE_EDITOR: 'true',
    EDITOR: 'true',
    VISUAL: 'true',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_CEILING_DIRECTORIES: dirname(repo.worktree),
    LC_ALL: 'C',
    LANG: 'C',
    GIT_CONFIG_COUNT: String(overrides.length),
  };
  overrides.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/**
 * The config files git reads for a repository besides the command line (system and global
 * config are off): the common folder's `config` and the git folder's `config.worktree`.
 * @param repo the repository.
 */
export function repoConfigFiles(repo: Repo): string[] {
  return [join(repo.commonDir, 'config'), join(repo.gitDir, 'config.worktree')];
}

/**
 * The bytes of one config file, read once: a missing file is empty; anything but a regular file
 * (a FIFO gives each reader different content), text that is not UTF-8, or a file larger than
 * {@link CONFIG_MAX_BYTES} is refused.
 * @param path the config file.
 * @param display the repository, for messages.
 */
async function readConfigOnce(path: string, display: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readRegularFile(path, CONFIG_MAX_BYTES);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT') return '';
    if (code === 'ENOTREG') throw configRefused(display, `${path} is not a regular file`);
    if (code === 'EFBIG') {
      throw configRefused(display, `${path} is larger than ${CONFIG_MAX_BYTES} bytes`);
    }
    throw configRefused(display, `${path} cannot be read: ${(error as Error).message}`);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // Key names are passed back to git as text: bytes that do not survive would miss the key.
    throw configRefused(display, `${path} is not UTF-8 text`);
  }
}

function configRefused(display: string, why: string): ToolError {
  return new ToolError(
    'PERMISSION_DENIED',
    `the config of ${display} was not used: ${why}; vaultd reads a repository's config once and needs it to be one plain file`,
    { data: { reason: 'unsafe_config' } },
  );
}

/**
 * Open a repository for commands: read each of its config files once, list its keys (git parses
 * the very bytes vaultd read, given on stdin, includes not followed), refuse a config that
 * includes other files, and add overrides for every program-running key it names.
 * @param repo the repository, found inside the roots.
 * @param config the pack's config.
 * @param home an empty folder for HOME.
 * @param exec how to start processes.
 * @throws ToolError `PERMISSION_DENIED` for a config with `include.*` or `includeIf.*` entries, or
 *   one that is not a regular UTF-8 file.
 */
export async function openSession(
  repo: Repo,
  config: GitConfig,
  home: string,
  exec: Exec,
): Promise<GitSession> {
  const fixed = fixedOverrides(config);
  const probe: GitSession = { repo, config, exec, env: gitEnv(config, home, repo, fixed) };
  const keys: string[] = [];
  for (const path of repoConfigFiles(repo)) {
    const text = await readConfigOnce(path, repo.display);
    if (text === '') continue;
    // An included file is read again by every git process, and may answer each differently (a
    // FIFO, a file the agent rewrites): the keys vaultd saw would not be the keys git uses.
    const listed = await runGit(probe, ['config', '--file=-', '--no-includes', '--list', '-z'], {
      input: text,
      maxOutputBytes: 2 * CONFIG_MAX_BYTES,
    });
    if (listed.exitCode !== 0) {
      throw gitFailure(listed, `cannot read the config of ${repo.display}`);
    }
    for (const entry of listed.stdout.split('\0')) {
      const key = entry.split('\n', 1)[0] ?? '';
      if (key === '') continue;
      const section = key.slice(0, key.indexOf('.')).toLowerCase();
      if (section === 'include' || section === 'includeif') {
        throw configRefused(repo.display, `${path} includes other files (${key})`);
      }
      keys.push(key);
    }
  }
  const overrides = [...fixed, ...repoOverrides(keys)];
  return { repo, config, exec, env: gitEnv(config, home, repo, overrides) };
}

/**
 * Run one git command in the session's repository: the git folder and working tree named
 * explicitly (no discovery), no pager, the session's environment.
 * @param session the session.
 * @param args the command and its arguments; user values only after checks or after `--`.
 * @param options stdin, output cap, extra environment.
 */
export async function runGit(
  session: GitSession,
  args: readonly string[],
  options: RunOptions = {},
): Promise<ExecResult> {
  const { repo } = session;
  const argv = ['--no-pager', `--git-dir=${repo.gitDir}`, `--work-tree=${repo.worktree}`, ...args];
  try {
    return await session.exec(session.config.gitPath, argv, {
      cwd: repo.worktree,
      env: { ...session.env, ...options.env },
      ...(options.input === undefined ? {} : { input: options.input }),
      maxOutputBytes: options.maxOutputBytes ?? 1024 * 1024,
    });
  } catch (error) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `could not start git (${session.config.gitPath}): ${(error as Error).message}`,
    );
  }
}

/**
 * Run a git command that must succeed; its failure becomes a {@link ToolError}.
 * @param session the session.
 * @param args the command.
 * @param what what was being done, for the message.
 * @param options as for {@link runGit}.
 */
export async function mustGit(
  session: GitSession,
  args: readonly string[],
  what: string,
  options: RunOptions = {},
): Promise<ExecResult> {
  const result = await runGit(session, args, options);
  if (result.exitCode !== 0) throw gitFailure(result, what);
  return result;
}

/** Reasons a failed git command gives, for `data.reason` of the error. */
export type GitFailureReason =
  | 'not_a_repository'
  | 'unknown_ref'
  | 'unknown_path'
  | 'merge_conflict'
  | 'local_changes'
  | 'nothing_to_commit'
  | 'push_rejected'
  | 'auth_failed'
  | 'remote_unreachable'
  | 'killed'
  | 'git_failed';

/**
 * A ToolError for a failed git command, with a reason read from its output.
 * @param result how it ended.
 * @param what what was being done.
 * @param sideEffect whether the command may have changed something.
 */
export function gitFailure(result: ExecResult, what: string, sideEffect = false): ToolError {
  const output = hideCredentials(`${result.stderr}\n${result.stdout}`.trim());
  const reason = classify(result, output);
  const detail = output === '' ? `exit code ${String(result.exitCode)}` : output.slice(0, 2000);
  return new ToolError('EXECUTION_FAILED', `${what}: ${HINTS[reason]}${detail}`, {
    sideEffect,
    data: {
      reason,
      exit_code: result.exitCode,
      stderr: hideCredentials(result.stderr.slice(0, 4000)),
    },
  });
}

const HINTS: Record<GitFailureReason, string> = {
  not_a_repository: 'not a git repository. ',
  unknown_ref: 'no such branch, tag or commit. ',
  unknown_path: 'a path matches no file git knows. ',
  merge_conflict: 'the repository has unresolved merge conflicts. ',
  local_changes: 'uncommitted changes would be overwritten; commit them first. ',
  nothing_to_commit: 'nothing to commit. ',
  push_rejected:
    'the remote refused the push (it has commits this branch lacks, or a rule forbids it). ',
  auth_failed: 'authentication failed (no credentials are available to vaultd). ',
  remote_unreachable: 'the remote cannot be reached. ',
  killed: 'git was stopped. ',
  git_failed: '',
};

function classify(result: ExecResult, output: string): GitFailureReason {
  if (result.killed || result.signal !== null) return 'killed';
  const text = output.toLowerCase();
  if (text.includes('not a git repository')) return 'not_a_repository';
  if (/unmerged|merge conflict|you have not concluded your merge|fix conflicts/.test(text)) {
    return 'merge_conflict';
  }
  if (text.includes('would be overwritten')) return 'local_changes';
  if (/nothing to commit|nothing added to commit|no changes added to commit/.test(text)) {
    return 'nothing_to_commit';
  }
  if (/\[rejected\]|\[remote rejected\]|failed to push|non-fast-forward/.test(text)) {
    return 'push_rejected';
  }
  if (
    /authentication failed|could not read (username|password)|permission denied \(publickey|terminal prompts disabled|http 401|http 403|403 forbidden/.test(
      text,
    )
  ) {
    return 'auth_failed';
  }
  if (
    /could not resolve host|connection refused|could not read from remote|unable to access/.test(
      text,
    )
  ) {
    return 'remote_unreachable';
  }
  // Line by line, not /pathspec .* did not match/: that ran each `pathspec ` to the end of its
  // line, time growing with the square of a line of many (a remote prints what it likes).
  if (
    text.split(/\r\n|[\n\r\u2028\u2029]/).some((line) => {
      const at = line.indexOf('pathspec ');
      return at !== -1 && line.indexOf(' did not match', at + 9) !== -1;
    })
  ) {
    return 'unknown_path';
  }
  if (/unknown revision|bad revision|invalid reference|not a valid object name/.test(text)) {
    return 'unknown_ref';
  }
  return 'git_failed';
}

/**
 * Text with the user-info of every URL in it removed (`https://user:token@host` → `https://host`).
 * @param text git's output.
 */
export function hideCredentials(text: string): string {
  return replaceUserInfo(text, /[^/@\s'"]*@/y, (scheme) => scheme);
}
