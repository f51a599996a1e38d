import { rmSync } from 'node:fs';
import { chmod, lstat, mkdtemp, readdir, realpath, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ToolError } from '../../protocol/errors.ts';
import type { PackContext } from '../../protocol/pack.ts';
import type { VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { CHECK_SHELL, firstClosed, runsAsRoot, STAT, type RunAs } from './run-as.ts';
import { isSystemPath } from './system-view.ts';

/** Where vaultd keeps what no sandboxed command may change. */
export interface VaultPaths {
  /** Real path of the vault. */
  readonly vault: string;
  /** Real path of vaultd's state folder (`.vaultd`), hidden from commands. */
  readonly state: string;
}

/** What a sandbox with a writable working directory mounts over it to protect vaultd. */
export interface VaultMounts {
  /**
   * Folders inside the working directory bound onto themselves, writable, before the mounts below
   * them: a mount point cannot be renamed or removed, which pins the way to a protected path.
   */
  readonly pin?: readonly string[];
  /** Folders replaced by an empty read-only tmpfs (vaultd's state, `/etc/vaultd`). */
  readonly hide: readonly string[];
  /** Files replaced by an empty one (read-only): vaultd's config file. */
  readonly blank: readonly string[];
  /** The empty file bound over them (see {@link emptyFile}); set when `blank` is not empty. */
  readonly empty?: string;
  /**
   * The vault, mounted read-only again when the working directory holds it, with its folders a
   * command may change bound writable on their own (`writable`): single-file mounts over vaultd's
   * files (`Dashboard.md`, a config file at the top) are dropped by the kernel when the file is
   * replaced by a rename (vaultd writes the Dashboard so every 5 s), after which a running command
   * could replace it; and a protected name that did not exist yet (`.obsidian/`) got no mount at
   * all (review finding). A new entry at the vault's top level cannot be made from a sandbox,
   * and its files are read-only there (a vault may hold thousands, one mount each).
   */
  readonly vaultRoot?: string;
  /** The vault's top-level folders bound writable on the read-only vault. */
  readonly writable?: readonly string[];
  /** Paths mounted read-only again (the vault's entries no tool may write, vaultd's plugins). */
  readonly readOnly: readonly string[];
  /** The working directory and the paths mounted in it, with the identity each must have. */
  readonly identities?: readonly MountIdentity[];
}

/**
 * The vault's and its state folder's real paths, for a pack.
 * @param ctx the pack's context (its `stateDir` is `<vault>/.vaultd/packs/<pack>`).
 */
export async function vaultPaths(
  ctx: Pick<PackContext, 'vault' | 'stateDir'>,
): Promise<VaultPaths> {
  const state = dirname(dirname(ctx.stateDir));
  return {
    vault: await realpath(ctx.vault),
    state: await realpath(state).catch(() => state),
  };
}

/**
 * The mounts that keep vaultd's files out of reach of a sandbox whose working directory is
 * writable:
 * - what no tool may read (vaultd's state, its config file, `/etc/vaultd` where the service keeps
 *   its secrets), wherever the sandbox shows it: a folder hidden under an empty tmpfs, a file
 *   replaced by an empty one;
 * - every entry at the vault's top level that a tool may not write (`Done/`, `Approved/`,
 *   `.obsidian/`, `Dashboard.md`…) read-only when the working directory holds the vault, and any
 *   other protected path inside the working directory (vaultd's config file or plugins kept in a
 *   folder of the vault) read-only too.
 * Paths the sandbox's user cannot reach are left alone: it cannot read them anyway, and bwrap
 * cannot mount over them.
 * @param cwd the working directory (absolute, real).
 * @param files the tool's roots, which know the protected paths.
 * @param paths the vault and its state folder.
 * @param everything the sandbox shows the whole file system (read-only), not only the system
 *   folders and the working directory.
 * @param runAs the user the sandbox runs as when vaultd runs as root.
 */
export async function vaultMounts(
  cwd: string,
  files: VaultAccess,
  paths: VaultPaths,
  everything = false,
  runAs?: RunAs,
): Promise<VaultMounts> {
  const { hide, blank, empty } = await secretMounts(
    files,
    (path) => everything || isInside(path, cwd) || isSystemPath(path),
    runAs,
    paths.state,
  );
  const covered = (path: string): boolean => [...hide, ...blank].some((p) => isInside(path, p));
  const readOnly = new Set<string>();
  const holdsVault = isInside(paths.vault, cwd);
  const writable: string[] = [];
  if (holdsVault) {
    for (const name of await readdir(paths.vault)) {
      const path = join(paths.vault, name);
      const info = await lstat(path).catch(() => undefined);
      // Folders only: a vault may hold thousands of notes at its top level, one mount each.
      if (info === undefined || !info.isDirectory()) continue;
      if (!(await refusedForWrite(files, path)) && !covered(path)) {
        if (await reachable(path, runAs)) writable.push(path);
      }
    }
  }
  for (const path of files.protectedPaths?.write ?? []) {
    if (path === cwd || !isInside(path, cwd)) continue;
    const info = await lstat(path).catch(() => undefined);
    if (info === undefined) continue;
    if (info.isSymbolicLink()) {
      // A mount cannot be put on a link, and a writable folder lets the command remove the link
      // and make the path again as it likes.
      throw new ToolError(
        'PERMISSION_DENIED',
        `the working directory holds ${path}, a symbolic link to one of vaultd's files or folders (its config, a plugin, .obsidian…), which a command here could replace; give a working directory that does not hold it, or make it a real file or folder`,
      );
    }
    readOnly.add(path);
  }
  // A folder between the working directory and a protected path is itself made a mount (of
  // itself, still writable): a mount point cannot be renamed or removed, so `mv setup old; mkdir
  // setup` cannot put a file of the command's at the protected path once the sandbox is gone.
  const pin = new Set<string>();
  for (const path of [...readOnly, ...hide, ...blank]) {
    if (!isInside(path, cwd)) continue;
    for (let at = dirname(path); at !== cwd && isInside(at, cwd); at = dirname(at)) pin.add(at);
  }
  // What the sandbox's user cannot reach it cannot change either, and bwrap cannot mount there.
  const frozen: string[] = [];
  for (const path of [...readOnly].sort()) {
    if (!covered(path) && (await reachable(path, runAs))) frozen.push(path);
  }
  const pinned: string[] = [];
  for (const path of [...pin].sort()) if (await reachable(path, runAs)) pinned.push(path);
  // What each path from the host must be once mounted: bwrap binds by path, so a folder swapped
  // for a link while the sandbox is set up would be mounted in its place (see identityCheckArgv).
  const identities: MountIdentity[] = [{ path: cwd, id: await identityOf(cwd) }];
  if (holdsVault && paths.vault !== cwd)
    identities.push({ path: paths.vault, id: await identityOf(paths.vault) });
  for (const path of [...writable, ...pinned, ...frozen])
    identities.push({ path, id: await identityOf(path) });
  if (empty !== undefined) {
    const id = await identityOf(empty);
    for (const path of blank) if (isInside(path, cwd)) identities.push({ path, id });
  }
  return {
    ...(holdsVault ? { vaultRoot: paths.vault, writable: writable.sort() } : {}),
    pin: pinned,
    hide,
    blank,
    ...(empty === undefined ? {} : { empty }),
    readOnly: frozen,
    identities,
  };
}

/** A path inside a sandbox and the device and inode (`dev:ino`) it must have there. */
export interface MountIdentity {
  readonly path: string;
  readonly id: string;
}

async function identityOf(path: string): Promise<string> {
  const info = await lstat(path);
  // What was checked as a folder or a file and is a link now was swapped meanwhile: its own
  // inode would be recorded, and the same link seen again inside the sandbox would pass.
  if (info.isSymbolicLink()) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${path} became a symbolic link while the sandbox was planned (swapped?); nothing ran`,
    );
  }
  return `${info.dev}:${info.ino}`;
}

/**
 * The identities of paths a sandbox binds from the host, for {@link identityCheckArgv}.
 * @param paths absolute real paths.
 */
export async function identitiesOf(paths: readonly string[]): Promise<MountIdentity[]> {
  const out: MountIdentity[] = [];
  for (const path of new Set(paths)) out.push({ path, id: await identityOf(path) });
  return out;
}

/**
 * The argument vector that runs `command` in a sandbox only once the paths mounted from the host
 * are the very folders and files vaultd checked: bwrap binds by path, so one swapped for a link
 * between vaultd's check and the mount (a background command of the agent's can flip a folder
 * in a loop) would be mounted in its place, another folder writable, a secret shown. A shell
 * compares `stat -c %d:%i` of each path with what vaultd saw; any difference exits 125 with
 * nothing run. Nothing is added without paths to check.
 * @param identities the paths and their `dev:ino`.
 * @param command the program and its arguments, run with `exec`.
 */
export function identityCheckArgv(
  identities: readonly MountIdentity[],
  command: readonly string[],
): string[] {
  if (identities.length === 0) return [...command];
  const script =
    'want=$1; n=$2; shift 2; ' +
    `got=$(${STAT} -c %d:%i -- "\${@:1:$n}" 2>&1) && [ "$got" = "$want" ] || ` +
    "{ printf '%s\\n' 'vaultd: a folder or file mounted into this sandbox changed while it was set up (a link swapped in?); nothing ran' >&2; exit 125; }; " +
    'shift "$n"; exec "$@"';
  return [
    CHECK_SHELL,
    '--noprofile',
    '--norc',
    '-c',
    script,
    'vaultd-sandbox-check',
    identities.map((i) => i.id).join('\n'),
    String(identities.length),
    ...identities.map((i) => i.path),
    ...command,
  ];
}

/**
 * The mounts that hide what no tool may read (vaultd's state, config file, `/etc/vaultd`) where a
 * sandbox would show it: a folder under an empty tmpfs, a file replaced by an empty one. Paths the
 * sandbox's user cannot reach are left alone (it cannot read them, and bwrap cannot mount there).
 * @param files the tool's access, which knows the paths protected for reading.
 * @param shown whether the sandbox shows a path.
 * @param runAs the user the sandbox runs as when vaultd runs as root.
 * @param state vaultd's state folder, when the access may not list it.
 */
export async function secretMounts(
  files: VaultAccess,
  shown: (path: string) => boolean,
  runAs: RunAs | undefined,
  state?: string,
): Promise<Pick<VaultMounts, 'hide' | 'blank' | 'empty'>> {
  const hide: string[] = [];
  const blank: string[] = [];
  const secret = new Set([
    ...(state === undefined ? [] : [state]),
    ...(files.protectedPaths?.read ?? []),
  ]);
  // Sorted, a folder comes before what it holds, which it then hides already.
  for (const path of [...secret].sort()) {
    if (!shown(path) || [...hide, ...blank].some((p) => isInside(path, p))) continue;
    // A link is listed with its target's real path, which is what is hidden.
    const info = await lstat(path).catch(() => undefined);
    if (info === undefined || info.isSymbolicLink() || !(await reachable(path, runAs))) continue;
    if (info.isDirectory()) hide.push(path);
    else blank.push(path);
  }
  return blank.length === 0 ? { hide, blank } : { hide, blank, empty: await emptyFile() };
}

let emptyDir: string | undefined;

/**
 * An empty read-only file anyone can read, to bind over a file a sandbox must not read. Not
 * `/dev/null`: a device node bound in a user namespace cannot be opened (nodev). Made once per
 * process in a folder of its own under the temp folder, and made again when a cleaner removed it.
 */
export async function emptyFile(): Promise<string> {
  if (emptyDir !== undefined) {
    const info = await lstat(join(emptyDir, 'empty')).catch(() => undefined);
    if (info?.isFile() === true && info.size === 0) return join(emptyDir, 'empty');
  }
  // In /tmp rather than $TMPDIR, which may be a folder run_as cannot enter (root's own).
  const dir = await mkdtemp(join('/tmp', 'vaultd-empty-')).catch(() =>
    mkdtemp(join(tmpdir(), 'vaultd-empty-')),
  );
  await chmod(dir, 0o755);
  await writeFile(join(dir, 'empty'), '', { mode: 0o444 });
  await chmod(join(dir, 'empty'), 0o444);
  if (emptyDir === undefined) {
    process.once('exit', () => {
      if (emptyDir !== undefined) rmSync(emptyDir, { recursive: true, force: true });
    });
  }
  emptyDir = dir;
  return join(dir, 'empty');
}

/**
 * The bwrap arguments for {@link VaultMounts}; they come after the working directory's `--bind`.
 * @param mounts what to hide and keep read-only.
 */
export function vaultMountArgs(mounts: VaultMounts): string[] {
  return [
    ...(mounts.vaultRoot === undefined ? [] : ['--ro-bind', mounts.vaultRoot, mounts.vaultRoot]),
    ...(mounts.writable ?? []).flatMap((p) => ['--bind', p, p]),
    ...(mounts.pin ?? []).flatMap((p) => ['--bind', p, p]),
    ...mounts.readOnly.flatMap((p) => ['--ro-bind', p, p]),
    ...mounts.hide.flatMap((p) => ['--tmpfs', p, '--remount-ro', p]),
    ...(mounts.empty === undefined ? [] : mounts.blank).flatMap((p) => [
      '--ro-bind',
      mounts.empty as string,
      p,
    ]),
  ];
}

/**
 * Whether the sandbox's user can reach a path (search every folder above it), so bwrap can mount
 * over it. As root the sandbox switches to `runAs`; otherwise it is vaultd's own user.
 */
async function reachable(path: string, runAs: RunAs | undefined): Promise<boolean> {
  if (!runsAsRoot() || runAs === undefined) {
    return stat(path).then(
      () => true,
      () => false,
    );
  }
  return firstClosed(dirname(path), runAs).then(
    (closed) => closed === undefined,
    () => false,
  );
}

async function refusedForWrite(files: VaultAccess, path: string): Promise<boolean> {
  try {
    await files.resolve(path, 'write');
    return false;
  } catch (error) {
    return error instanceof ToolError && error.code === 'PERMISSION_DENIED';
  }
}
