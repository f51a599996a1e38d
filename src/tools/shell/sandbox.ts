import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, constants } from 'node:fs/promises';
import { dropUserArgv, runsAsRoot, SETPRIV, STAT } from '../sandbox/run-as.ts';
import { systemViewArgs } from '../sandbox/system-view.ts';
import { identityCheckArgv, vaultMountArgs, type VaultMounts } from '../sandbox/vault-mounts.ts';
import type { ShellSettings } from './config.ts';

export { runsAsRoot } from '../sandbox/run-as.ts';

const PRLIMIT = '/usr/bin/prlimit';
const BASH = '/bin/bash';
/** Prefix of the no-op variable name that tags each sandbox's bwrap process (see `sweep.ts`). */
export const TAG_PREFIX = 'VAULTD_SANDBOX_';

/**
 * What the sandbox of one command looks like: its working directory, environment and command, and
 * the mounts that keep vaultd's files out of its reach (see `vaultMounts`).
 */
export interface SandboxPlan extends VaultMounts {
  /** Absolute real path of the working directory (writable). */
  readonly cwd: string;
  /** Variables set inside, besides `PATH`, `HOME` and `TMPDIR`. */
  readonly env: Readonly<Record<string, string>>;
  /** The command line, run by `bash -c`. */
  readonly command: string;
  /** A unique tag (from {@link newTag}) to find the sandbox's processes after a kill. */
  readonly tag: string;
}

/** Whether the sandbox can run here, and why not. */
export type SandboxStatus = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** A fresh tag for one sandbox. */
export function newTag(): string {
  return TAG_PREFIX + randomBytes(12).toString('hex');
}

/**
 * The argument vector that runs a command line in the sandbox: (as root: `setpriv` to the
 * `run_as` user, since the kernel does not count processes against RLIMIT_NPROC for uid 0) →
 * `bwrap` (new user, PID, IPC, UTS and network namespaces, no capabilities, the system
 * read-only, the working directory writable, a private /tmp, only the given environment, killed
 * with vaultd) → `prlimit` (CPU, address space, file size, processes, open files) →
 * `bash -c -- <command>`. With `sandbox: none` bwrap is left out, the rest stays.
 * @param settings the pack's settings.
 * @param plan the working directory, environment, hidden and read-only paths, command and tag.
 * @param systemLinks the system paths that are symbolic links, from {@link systemView}.
 */
export function sandboxArgv(
  settings: ShellSettings,
  plan: SandboxPlan,
  systemLinks: SystemView,
): string[] {
  const r = settings.resources;
  const mib = 1024 * 1024;
  const limits = [
    PRLIMIT,
    `--cpu=${r.cpuSeconds}`,
    `--as=${r.memoryMb * mib}`,
    `--fsize=${r.fileSizeMb * mib}`,
    `--nproc=${r.processes}`,
    `--nofile=${r.openFiles}`,
    '--core=0',
    '--',
  ];
  const run = [BASH, '--noprofile', '--norc', '-c', '--', plan.command];
  const dropUser = dropUserArgv(settings.runAs);
  if (settings.sandbox === 'none') return [...dropUser, ...limits, ...run];
  const env = sandboxEnv(settings, plan.env);
  return [
    ...dropUser,
    settings.bwrapPath,
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(settings.network ? [] : ['--unshare-net']),
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    'sandbox',
    '--clearenv',
    ...Object.entries(env).flatMap(([name, value]) => ['--setenv', name, value]),
    // A no-op that marks this bwrap's command line, so a sweep can find it after a kill.
    '--unsetenv',
    plan.tag,
    ...systemLinks.args,
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--size',
    String(r.tmpMb * mib),
    '--tmpfs',
    '/tmp',
    '--bind',
    plan.cwd,
    plan.cwd,
    ...vaultMountArgs(plan),
    '--chdir',
    plan.cwd,
    '--',
    ...limits,
    ...identityCheckArgv(plan.identities ?? [], run),
  ];
}

/** The environment inside the sandbox: `PATH`, `HOME` and `TMPDIR`, then the call's own. */
export function sandboxEnv(
  settings: ShellSettings,
  env: Readonly<Record<string, string>>,
): Record<string, string> {
  return { PATH: settings.path, HOME: '/tmp', TMPDIR: '/tmp', ...env };
}

/** The bwrap arguments that show the system folders read-only. */
export interface SystemView {
  readonly args: readonly string[];
}

/** The system folders as this machine has them (see {@link systemViewArgs}), read once at start. */
export function systemView(): SystemView {
  return { args: systemViewArgs() };
}

/**
 * Check once that the sandbox can run: the programs exist, and bwrap starts a sandbox of the
 * full profile (user namespaces allowed, /proc mountable) that runs `true`.
 * @param settings the pack's settings.
 * @param view the system folders.
 * @returns ok, or the reason in words an operator can act on.
 */
export async function probeSandbox(
  settings: ShellSettings,
  view: SystemView,
): Promise<SandboxStatus> {
  const programs = [PRLIMIT, BASH, STAT, ...(runsAsRoot() ? [SETPRIV] : [])];
  if (settings.sandbox === 'bwrap') programs.unshift(settings.bwrapPath);
  for (const program of programs) {
    try {
      await access(program, constants.X_OK);
    } catch {
      const hint =
        program === settings.bwrapPath
          ? ' (install bubblewrap: apt install bubblewrap; or set tools.shell.bwrap_path)'
          : ' (util-linux)';
      return { ok: false, reason: `${program} is not installed or not executable${hint}` };
    }
  }
  if (settings.sandbox === 'none') return { ok: true };
  const argv = sandboxArgv(
    settings,
    { cwd: '/tmp', env: {}, hide: [], blank: [], readOnly: [], command: 'true', tag: newTag() },
    view,
  );
  const [file, ...args] = argv;
  const outcome = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(file ?? settings.bwrapPath, args, {
      env: { PATH: '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 10_000,
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (error) => resolve({ code: -1, stderr: error.message }));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  if (outcome.code === 0) return { ok: true };
  return {
    ok: false,
    reason:
      `bubblewrap cannot start a sandbox here (${outcome.stderr.trim().slice(0, 500) || `exit code ${String(outcome.code)}`}); ` +
      'user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, or a systemd unit with RestrictNamespaces=), see docs/tools/shell.md',
  };
}
