import { access, constants, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';
import type { JsonSchema } from '../../protocol/types.ts';

/** The user and group a sandbox drops to when vaultd runs as root. */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** `setpriv` of util-linux, which drops to {@link RunAs} before bwrap starts. */
export const SETPRIV = '/usr/bin/setpriv';

/** `nobody`/`nogroup` on Debian: the default `run_as`. */
const NOBODY = 65_534;

/** JSON Schema of a pack's `run_as` (`{ uid, gid }`, both 65534 by default, never 0). */
export const runAsSchema: JsonSchema = {
  type: 'object',
  properties: {
    uid: { type: 'integer', minimum: 1, maximum: 4_294_967_294, default: NOBODY },
    gid: { type: 'integer', minimum: 1, maximum: 4_294_967_294, default: NOBODY },
  },
  additionalProperties: false,
  default: {},
};

/**
 * Read a validated `run_as` value (defaults 65534 for what is absent).
 * @param value the section's `run_as`, validated against {@link runAsSchema}, or undefined.
 */
export function readRunAs(value: unknown): RunAs {
  const raw = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const num = (v: unknown): number => (typeof v === 'number' ? v : NOBODY);
  return Object.freeze({ uid: num(raw['uid']), gid: num(raw['gid']) });
}

/** Whether vaultd runs as root, where sandboxes drop to `run_as` first. */
export function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * The `setpriv` prefix that drops to `run_as` (no supplementary groups) when vaultd runs as root;
 * empty otherwise. As root, bwrap would keep root's capabilities over the host's mounts, and the
 * kernel never counts uid 0's processes against `RLIMIT_NPROC`.
 * @param runAs the user and group.
 */
export function dropUserArgv(runAs: RunAs): string[] {
  if (!runsAsRoot()) return [];
  return [SETPRIV, `--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups', '--'];
}

/** Where bubblewrap is expected. */
export const BWRAP = '/usr/bin/bwrap';

/** `stat` of coreutils: the mount identity check inside a sandbox prints devices and inodes. */
export const STAT = '/usr/bin/stat';

/** The shell that runs that check before the sandboxed program. */
export const CHECK_SHELL = '/bin/bash';

/**
 * The program a sandbox needs that is not installed: bubblewrap, or (when vaultd runs as root)
 * setpriv; undefined when both are there.
 */
export async function missingSandboxProgram(): Promise<string | undefined> {
  for (const program of [BWRAP, CHECK_SHELL, STAT, ...(runsAsRoot() ? [SETPRIV] : [])]) {
    try {
      await access(program, constants.X_OK);
    } catch {
      return program;
    }
  }
  return undefined;
}

/**
 * Refuse, before anything runs, a folder the `run_as` user cannot reach (a folder on the way
 * without search permission for it): bwrap would fail with a message about mounts. Nothing to
 * check unless vaultd runs as root (only then does the sandbox switch to `run_as`).
 * @param dir the working directory (absolute, real).
 * @param user the `run_as` user.
 * @param what who runs there and the config key, e.g. `commands` and `tools.shell.run_as`.
 * @throws ToolError `EXECUTION_FAILED` naming the folder.
 */
export async function checkSearchable(
  dir: string,
  user: RunAs,
  what: { readonly who: string; readonly key: string },
): Promise<void> {
  if (!runsAsRoot()) return;
  const at = await firstClosed(dir, user);
  if (at !== undefined) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${what.who} run as uid ${user.uid} (${what.key}, since vaultd runs as root), which cannot enter ${at}; ` +
        'let that user search the folders up to the working directory (chmod o+x, a group, or another run_as)',
    );
  }
}

/**
 * The first folder from `dir` up to `/` that `user` may not search (by the permission bits, as a
 * user with no capabilities), or undefined when it may search them all.
 * @param dir an absolute path.
 * @param user the user and group.
 * @throws the `stat` error of a folder that is not there.
 */
export async function firstClosed(dir: string, user: RunAs): Promise<string | undefined> {
  for (let at = dir; ; at = dirname(at)) {
    const info = await stat(at);
    const bit = info.uid === user.uid ? 0o100 : info.gid === user.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) return at;
    if (dirname(at) === at) return undefined;
  }
}
