import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { errnoCode, isVanished, toVaultIoError } from './fs-errors.ts';
import { isProcessAlive, selfIdentity } from './process-identity.ts';

/** What the lock file holds. */
export interface LockInfo {
  readonly pid: number;
  readonly hostname: string;
  readonly started_at: string;
  /** Tells this holder from a later process that got the same pid. */
  readonly token: string;
  /** The holder's start time in clock ticks since boot, when known: a reused pid is not it. */
  readonly start?: number | null;
  /** The kernel boot id when the lock was taken: a lock from an earlier boot is stale. */
  readonly boot?: string;
}

/** A held lock on a vault. */
export interface VaultLock {
  /** Absolute path of the lock file. */
  readonly path: string;
  readonly info: LockInfo;
  /**
   * Whether the lock file is still ours: `held`, `gone` (deleted, or its folder), or `replaced`
   * (another process wrote its own).
   */
  check(): Promise<'held' | 'gone' | 'replaced'>;
  /** Write our lock file again after it was deleted; false when another process took it. */
  restore(): Promise<boolean>;
  /** Remove the lock file if it is still ours; safe to call twice. */
  release(): Promise<void>;
}

/** Thrown when another vaultd holds the vault. */
export class LockError extends Error {
  readonly code = 'VAULT_LOCKED';
  /** The holder, when the lock file could be read. */
  readonly holder: LockInfo | null;
  readonly path: string;

  /**
   * @param path the lock file.
   * @param holder who holds it, when known.
   * @param message overrides the standard message.
   */
  constructor(path: string, holder: LockInfo | null, message?: string) {
    const where =
      holder !== null && holder.hostname !== hostname() ? ` on host ${holder.hostname}` : '';
    super(
      message ??
        `another vaultd (pid ${holder?.pid ?? '?'}${where}, started ${holder?.started_at ?? 'at an unknown time'}) is running on this vault; stop it first or remove ${path} if it is stale`,
    );
    this.name = 'LockError';
    this.holder = holder;
    this.path = path;
  }
}

/** Name of the lock file inside the state folder. */
export const LOCK_FILE_NAME = 'lock';

// A lock file that cannot be parsed may be one another process is writing this very moment.
const UNREADABLE_GRACE_MS = 2_000;
const ACQUIRE_DEADLINE_MS = 5_000;
const held = new Set<string>();

/**
 * Take the vault's lock (`<stateDir>/lock`, created with O_EXCL and holding pid, host and start
 * time). A lock whose process is gone (same host, pid dead or reused by this very process) is
 * taken over; of several processes taking over the same stale lock, exactly one wins.
 * @param stateDir the vault's `.vaultd` folder; created when missing.
 * @throws LockError when a live process holds the lock (or one on another host: no way to check).
 * @throws VaultIoError when the folder or file cannot be written.
 */
export async function acquireLock(stateDir: string): Promise<VaultLock> {
  const path = join(stateDir, LOCK_FILE_NAME);
  try {
    await mkdir(stateDir, { recursive: true });
  } catch (error) {
    throw toVaultIoError('mkdir', stateDir, error);
  }
  const self = selfIdentity();
  const info: LockInfo = {
    pid: process.pid,
    hostname: hostname(),
    started_at: new Date().toISOString(),
    token: randomUUID(),
    start: self.start,
    boot: self.boot,
  };
  const text = `${JSON.stringify(info)}\n`;
  const deadline = Date.now() + ACQUIRE_DEADLINE_MS;
  while (Date.now() < deadline) {
    if (await createExclusive(path, text)) return holdLock(path, info);
    const current = await readLockText(path);
    if (current === null) continue; // released meanwhile: try again
    const holder = parseLockInfo(current);
    if (holder !== null && isHolderAlive(holder, path)) throw new LockError(path, holder);
    if (holder === null && !(await isOlderThan(path, UNREADABLE_GRACE_MS))) {
      await sleep(50);
      continue;
    }
    if (await takeOver(stateDir, path, current, text, info.token)) return holdLock(path, info);
  }
  throw new LockError(
    path,
    parseLockInfo((await readLockText(path)) ?? ''),
    `could not take ${path}: other processes keep competing for it`,
  );
}

/**
 * Read who holds the vault's lock, for `vaultd status`.
 * @param stateDir the vault's `.vaultd` folder.
 * @returns the holder and whether its process is alive, or null when there is no readable lock.
 */
export async function readLock(
  stateDir: string,
): Promise<{ info: LockInfo; alive: boolean } | null> {
  const path = join(stateDir, LOCK_FILE_NAME);
  const info = parseLockInfo((await readLockText(path)) ?? '');
  return info === null ? null : { info, alive: isHolderAlive(info, path) };
}

function holdLock(path: string, info: LockInfo): VaultLock {
  held.add(path);
  let released = false;
  const text = `${JSON.stringify(info)}\n`;
  return {
    path,
    info,
    async check() {
      const current = await readLockText(path).catch(() => null);
      if (current === null) return 'gone';
      return parseLockInfo(current)?.token === info.token ? 'held' : 'replaced';
    },
    async restore() {
      if (released) return false;
      await mkdir(dirname(path), { recursive: true });
      return createExclusive(path, text);
    },
    async release() {
      if (released) return;
      released = true;
      held.delete(path);
      const current = parseLockInfo((await readLockText(path)) ?? '');
      if (current?.token !== info.token) return;
      try {
        await unlink(path);
      } catch (error) {
        if (!isVanished(error)) throw toVaultIoError('unlink', path, error);
      }
    },
  };
}

async function createExclusive(path: string, text: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, 'wx', 0o644);
  } catch (error) {
    if (errnoCode(error) === 'EEXIST') return false;
    throw toVaultIoError('open', path, error);
  }
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
    throw toVaultIoError('write', path, error);
  }
  await handle.close();
  return true;
}

/**
 * Replace the stale lock whose content is `stale`. A marker file named after that content,
 * created with O_EXCL, lets only one process at a time check and replace it; the check after
 * taking the marker sees any replacement a previous marker holder made.
 */
async function takeOver(
  stateDir: string,
  path: string,
  stale: string,
  text: string,
  token: string,
): Promise<boolean> {
  const digest = createHash('sha256').update(stale).digest('hex').slice(0, 16);
  const marker = join(stateDir, `${LOCK_FILE_NAME}.takeover-${digest}`);
  if (!(await createExclusive(marker, `${process.pid}\n`))) {
    await clearDeadMarker(marker);
    return false;
  }
  try {
    if ((await readLockText(path)) !== stale) return false;
    const temp = join(stateDir, `.${LOCK_FILE_NAME}.${token}.tmp`);
    try {
      await writeFile(temp, text, { mode: 0o644, flush: true });
      await rename(temp, path);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw toVaultIoError('rename', path, error);
    }
    return parseLockInfo((await readLockText(path)) ?? '')?.token === token;
  } finally {
    await unlink(marker).catch(() => undefined);
  }
}

/**
 * How old a takeover marker may get before it is a leftover whatever it holds: a takeover keeps
 * it for milliseconds, and a start gives up after ACQUIRE_DEADLINE_MS. Two takers at once are
 * safe anyway: the one whose lock is read back wins.
 */
const MARKER_STALE_MS = 2_000;

/**
 * A taker that crashed between taking the marker and removing it must not block the vault forever
 * (see {@link isLeftover}): an empty marker blocked every later start (crash campaign finding).
 */
async function clearDeadMarker(marker: string): Promise<void> {
  if (await isLeftover(marker, MARKER_STALE_MS)) {
    await unlink(marker).catch(() => undefined);
  } else {
    await sleep(20);
  }
}

/**
 * Whether a short-lived lock file holding a pid (a takeover marker, the grants' lock) was left
 * behind: its pid is dead, or it is older than `staleMs`, whatever it holds (empty after a kill
 * between its creation and its pid being written, or a pid that lives again).
 */
async function isLeftover(path: string, staleMs: number): Promise<boolean> {
  const text = await readLockText(path);
  if (text === null) return false;
  const pid = Number(text.trim());
  if (Number.isInteger(pid) && pid > 0 && !isPidAlive(pid)) return true;
  return isOlderThan(path, staleMs);
}

/**
 * Run `work` holding a short-lived lock file of its own (made with O_EXCL, holding this process's
 * pid), for a read-change-write of a file that several processes change; a lock left behind (see
 * {@link isLeftover}) is taken over.
 * @param path the lock file.
 * @param work what to do holding it.
 * @param options how long to wait for another holder (`waitMs`), when a lock is a leftover
 *   whatever it holds (`staleMs`), and the error when the wait is over (`busy`).
 * @throws VaultIoError when the lock file cannot be made; `busy()` past the wait.
 */
export async function withLockFile<T>(
  path: string,
  work: () => Promise<T>,
  options: { waitMs: number; staleMs: number; busy: () => Error },
): Promise<T> {
  const deadline = Date.now() + options.waitMs;
  while (!(await createExclusive(path, `${process.pid}\n`))) {
    if (await isLeftover(path, options.staleMs)) {
      await unlink(path).catch(() => undefined);
      continue;
    }
    if (Date.now() >= deadline) throw options.busy();
    await sleep(20);
  }
  try {
    return await work();
  } finally {
    await unlink(path).catch(() => undefined);
  }
}

async function readLockText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (isVanished(error)) return null;
    throw toVaultIoError('read', path, error);
  }
}

function parseLockInfo(text: string): LockInfo | null {
  try {
    const value = JSON.parse(text) as Partial<LockInfo> | null;
    if (value === null || typeof value !== 'object') return null;
    if (!Number.isInteger(value.pid) || (value.pid as number) <= 0) return null;
    if (typeof value.hostname !== 'string') return null;
    return {
      pid: value.pid as number,
      hostname: value.hostname,
      started_at: typeof value.started_at === 'string' ? value.started_at : 'at an unknown time',
      token: typeof value.token === 'string' ? value.token : '',
      start: typeof value.start === 'number' ? value.start : null,
      boot: typeof value.boot === 'string' ? value.boot : '',
    };
  } catch {
    return null;
  }
}

function isHolderAlive(holder: LockInfo, path: string): boolean {
  if (holder.hostname !== hostname()) return true;
  // Same pid as ours but not held by us: a previous run that got the same pid (pid 1 in a container).
  if (holder.pid === process.pid) return held.has(path);
  // pid, start time and boot id: a pid reused after a reboot or by another program is not the holder.
  return isProcessAlive({
    pid: holder.pid,
    hostname: holder.hostname,
    start: holder.start ?? null,
    boot: holder.boot ?? '',
  });
}

function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === 'EPERM';
  }
}

async function isOlderThan(path: string, ms: number): Promise<boolean> {
  try {
    return Date.now() - (await stat(path)).mtimeMs > ms;
  } catch (error) {
    if (isVanished(error)) return false;
    throw toVaultIoError('stat', path, error);
  }
}
