import { stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { CallProcesses } from '../../execute/exec.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { JsonSchema, PreviewBasis, VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { hashRegularFile } from '../../vault/read-regular.ts';
import { readGitConfig } from './config.ts';
import { locateRepo, repoPath, type Repo } from './repo.ts';
import { openSession, runGit, type Exec, type GitSession } from './run.ts';

/** What the pack's tools share while it runs. */
export interface GitRuntime {
  /** An empty folder of the pack's own, the HOME of every git process. */
  readonly home: string;
  /** vaultd's state folder (`.vaultd/`), left out of every pathspec. */
  readonly state: string | undefined;
}

/** Holds the runtime once the pack started (tools are declared before). */
export class RuntimeHolder {
  #runtime: GitRuntime | undefined;

  /** @param runtime the pack's runtime. */
  set(runtime: GitRuntime): void {
    this.#runtime = runtime;
  }

  /** The runtime; a tool called before the pack started fails. */
  get(): GitRuntime {
    if (this.#runtime === undefined) {
      throw new ToolError('EXECUTION_FAILED', 'the git pack has not started');
    }
    return this.#runtime;
  }
}

/** Characters of diff text kept in a result. */
export const MAX_DIFF_CHARS = 120_000;

/** The `repo` parameter every tool has. */
export const REPO_PARAM: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 4096,
  description:
    'the repository folder, relative to the vault or absolute inside a configured root; default the vault',
};

/** A list of paths inside the repository. */
export const PATHS_PARAM: JsonSchema = {
  type: 'array',
  items: { type: 'string', minLength: 1, maxLength: 4096 },
  maxItems: 200,
  description: 'paths relative to the repository (or absolute inside it)',
};

/**
 * The `paths` parameter is relative to the repository `repo` is in: the gate sees each path in
 * its canonical form there, and deny and ask rules also its vault path.
 */
export const REPO_PATHS: Readonly<Record<string, string>> = Object.freeze({ paths: 'repo' });

/**
 * Open the repository a call names.
 * @param holder the pack's runtime.
 * @param config the pack's config section.
 * @param files the tool's file access.
 * @param repoArg the `repo` parameter.
 * @param exec how to start git.
 * @param mode `write` for calls that change the repository or its tree.
 */
export async function sessionFor(
  holder: RuntimeHolder,
  config: Readonly<Record<string, unknown>>,
  files: VaultAccess,
  repoArg: string | undefined,
  exec: Exec,
  mode: 'read' | 'write',
): Promise<GitSession> {
  const repo = await locateRepo(files, repoArg, mode);
  return openSession(repo, readGitConfig(config), holder.get().home, exec);
}

/**
 * A process runner for effects functions and previews, which have no `ctx.exec`: its processes
 * are killed with their group when the signal aborts.
 * @param signal aborted at the deadline.
 */
export function standaloneExec(signal: AbortSignal): Exec {
  const processes = new CallProcesses(signal);
  return (file, args, options) => processes.exec(file, args, options);
}

/**
 * Open the repository of a writing call from its effects function or its preview, which have no
 * `ctx.exec`: git runs through {@link standaloneExec}.
 * @param holder the pack's runtime.
 * @param from the facts or preview context (config section and file access).
 * @param repoArg the `repo` parameter.
 * @param signal aborted at the deadline.
 */
export function standaloneWriteSession(
  holder: RuntimeHolder,
  from: { readonly config: Readonly<Record<string, unknown>>; readonly files: VaultAccess },
  repoArg: string | undefined,
  signal: AbortSignal,
): Promise<GitSession> {
  return sessionFor(holder, from.config, from.files, repoArg, standaloneExec(signal), 'write');
}

/**
 * The pathspecs of a call: each path checked inside the repository and the roots, then given to
 * git as a literal (no glob, no magic); vaultd's state folder, and whatever no tool may read (its
 * config file), are left out when they are in the tree.
 * @param files the tool's file access.
 * @param holder the pack's runtime.
 * @param session the repository.
 * @param paths the agent's paths; none means the whole tree.
 * @param mode `write` when the call changes what is at the paths.
 */
export async function pathspecs(
  files: VaultAccess,
  holder: RuntimeHolder,
  session: GitSession,
  paths: readonly string[] | undefined,
  mode: 'read' | 'write',
): Promise<string[]> {
  const { repo } = session;
  const given = paths === undefined || paths.length === 0 ? ['.'] : paths;
  const specs: string[] = [];
  for (const path of given) specs.push(`:(literal)${await repoPath(files, repo, path, mode)}`);
  // vaultd's state, and what no tool may read (its config file kept in the vault): left out of
  // what git reads and shows, history included.
  const state = holder.get().state;
  const hidden = new Set([
    ...(state === undefined ? [] : [state]),
    ...(files.protectedPaths?.read ?? []),
  ]);
  for (const path of hidden) {
    if (!isInside(path, repo.worktree) || path === repo.worktree) continue;
    const rel = relative(repo.worktree, path).split(sep).join('/');
    // Reading, history may hold it even when it is ignored now. Adding, git refuses an exclude
    // that names an ignored path, and an ignored path is left out anyway.
    const ignored =
      mode === 'write' &&
      (
        await runGit(session, [
          'check-ignore',
          '--quiet',
          '--',
          // A folder as a folder: an ignore rule such as `.vaultd/` matches only that way.
          (await isFolder(path)) ? `${rel}/` : rel,
        ])
      ).exitCode === 0;
    if (!ignored) specs.push(`:(exclude,literal)${rel}`);
  }
  return specs;
}

async function isFolder(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() === true;
}

/**
 * Cut long text with a marker.
 * @param text the text.
 * @param max characters kept.
 */
export function capText(text: string, max = MAX_DIFF_CHARS): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  return {
    text: `${text.slice(0, max)}\n[… ${text.length - max} more characters not shown]`,
    truncated: true,
  };
}

/**
 * The basis entry of a file (its SHA-256, null when absent).
 * @param path absolute path.
 */
export async function basisOf(path: string): Promise<PreviewBasis> {
  try {
    return {
      path,
      // Never waiting on a fifo put where a ref belongs.
      sha256: await hashRegularFile(path),
    };
  } catch {
    return { path, sha256: null };
  }
}

/**
 * The files a branch's position is read from: its loose ref and the packed refs.
 * @param repo the repository.
 * @param branch a checked branch name.
 */
export function branchRefFiles(repo: Repo, branch: string): string[] {
  return [
    join(repo.commonDir, 'refs', 'heads', ...branch.split('/')),
    join(repo.commonDir, 'packed-refs'),
  ];
}

/** Argument trimming shared by the tools' normalize functions. */
export function trimmed<T extends Record<string, unknown>>(args: T, keys: readonly string[]): T {
  const out: Record<string, unknown> = { ...args };
  for (const key of keys) {
    const value = out[key];
    if (typeof value === 'string') out[key] = value.trim().normalize('NFC');
  }
  return out as T;
}
