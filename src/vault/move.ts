import { constants } from 'node:fs';
import { copyFile, link, open, readdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { lstat, rename } from './fs-calls.ts';
import { fsyncDirectory } from './fsync-dir.ts';
import { errnoCode, isVanished, toVaultIoError } from './fs-errors.ts';
import { fitName, isTooLong } from './file-names.ts';
import type { VaultLayout } from './layout.ts';
import { claimedName, readClaimedName } from './claim.ts';
import { assertInsideVault } from './vault-writer.ts';

/** Options of {@link moveNoOverwrite}. */
export interface MoveOptions {
  /**
   * fsync both folders after the move so it survives a power loss (a process crash never loses
   * a rename). Default false: see {@link moveNoOverwrite} for when to ask for it.
   */
  fsync?: boolean;
  /**
   * Absolute path of the vault: when given, `destDir` is first checked to be the vault's own
   * folder of that name, with no symbolic link on the way ({@link assertInsideVault}), and
   * nothing moves when it is not. Every move into a folder an agent can replace passes it.
   */
  vault?: string;
  /**
   * Only the name itself, never a numbered one: when it is taken nothing moves and the move
   * answers null, as for a file that vanished.
   */
  exact?: boolean;
}

// link() fails with these where the file system has no hard links (FAT, exFAT, some FUSE and
// network mounts, Android storage) or the folders are on different devices.
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'ENOSYS', 'EMLINK']);

/**
 * The paths this process is moving a file to right now. A check that a name is free and the
 * rename that takes it are two steps, and two of vaultd's own moves with the same wanted name
 * (two notes called `task.md` finishing together) would both find it free, the second rename
 * replacing the first note. Each move reserves its name here first (no await between the look
 * and the add), and the others look past a reserved name.
 */
const movingTo = new Set<string>();

/**
 * Run `move` with `dest` reserved, or answer 'taken' at once when another move of this process
 * holds it.
 */
async function reserved<T>(dest: string, move: () => Promise<T>): Promise<T | 'taken'> {
  if (movingTo.has(dest)) return 'taken';
  movingTo.add(dest);
  try {
    return await move();
  } finally {
    movingTo.delete(dest);
    for (const look of looking.get(dest) ?? []) look.stale = true;
  }
}

/** A look for a name made before it is reserved; stale once a move to that name ends. */
interface EarlyLook {
  readonly taken: Promise<boolean>;
  stale: boolean;
}

/** The early looks in flight, by path. */
const looking = new Map<string, Set<EarlyLook>>();

/**
 * Start looking whether `dest` is taken before reserving it (see {@link moveClaimed}); `done`
 * when the look is no longer needed.
 */
function lookEarly(dest: string): { look: EarlyLook; done: () => void } {
  const look: EarlyLook = { taken: exists(dest), stale: false };
  look.taken.catch(() => undefined); // awaited by the caller unless it throws first
  let set = looking.get(dest);
  if (set === undefined) looking.set(dest, (set = new Set()));
  set.add(look);
  return {
    look,
    done: () => {
      set.delete(look);
      if (set.size === 0 && looking.get(dest) === set) looking.delete(dest);
    },
  };
}

/**
 * The name to try after `name` is taken: `task.md`, `task-1.md`, `task-2.md`… (the stem cut
 * short when the name would be longer than the file system takes).
 * @param name the wanted file name.
 * @param attempt 0 for the name itself, n for the n-th suffix.
 */
export function suffixedName(name: string, attempt: number): string {
  if (attempt === 0) return name;
  const ext = extname(name);
  const stem = ext === '' || ext === name ? name : name.slice(0, -ext.length);
  // A name as long as the file system takes is cut short to make room for the number.
  return fitName(stem, `-${attempt}${ext === name ? '' : ext}`);
}

/**
 * Move a file into `destDir` without ever overwriting a file there: a taken name gets the
 * next free numbered suffix (`task.md` → `task-1.md` → `task-2.md`). Uses `link` then `unlink`, so
 * taking the name is atomic against any concurrent creator, and of two movers of the same file
 * exactly one wins. Where hard links are unsupported it falls back to checking the name, then
 * `rename`: a file created under that name in between would be replaced (a small race that
 * such file systems leave no way to close), and a file moved across devices is copied, then
 * removed.
 *
 * Moves are not fsynced by default: a crash of the process never loses a rename, only a power
 * cut can, and a lost move leaves the note in its previous folder, whole. The one move whose loss
 * matters is a claim followed by a side effect: the ledger records intents under the note's
 * `In_Progress/` path, so fsync that folder (`fsync: true` here, or {@link fsyncDirectory}) once
 * before the note's first intent; every other move can skip it.
 * @param src absolute path of the file.
 * @param destDir absolute path of the target folder, which must exist.
 * @param name the wanted name; defaults to the file's own name.
 * @param options `fsync` (default false), `vault` (checks `destDir` first).
 * @returns the new absolute path, or null when `src` vanished (someone else moved or deleted it).
 * @throws VaultIoError for any other failure (code `EOUTSIDE` when `destDir` is refused); the file
 *   is then where it was.
 */
export async function moveNoOverwrite(
  src: string,
  destDir: string,
  name: string = basename(src),
  options: MoveOptions = {},
): Promise<string | null> {
  if (options.vault !== undefined) await assertInsideVault(options.vault, destDir);
  for (let attempt = 0; ; attempt += 1) {
    const dest = join(destDir, suffixedName(name, attempt));
    let outcome: 'moved' | 'taken' | 'vanished' | 'no-links';
    try {
      outcome = await reserved(dest, () => linkThenUnlink(src, dest));
    } catch (error) {
      throw toVaultIoError('move', src, error);
    }
    if (outcome === 'no-links') return moveByRename(src, destDir, name, attempt, options);
    if (outcome === 'vanished') return null;
    if (outcome === 'moved') {
      if (options.fsync === true) await syncBoth(src, dest);
      return dest;
    }
    if (options.exact === true) return null;
  }
}

async function linkThenUnlink(
  src: string,
  dest: string,
): Promise<'moved' | 'taken' | 'vanished' | 'no-links'> {
  try {
    await link(src, dest);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'EEXIST') return 'taken';
    if (code !== undefined && NO_HARD_LINKS.has(code)) return 'no-links';
    if (isVanished(error)) {
      // ENOENT also comes from a missing target folder: tell the two apart.
      if (await exists(src)) throw error;
      return 'vanished';
    }
    throw error;
  }
  // An editor that saved the note (a new file renamed over it) between the link and the unlink
  // would lose that save to the unlink: the name is only removed while it is still the file
  // linked. Otherwise our link goes and the newer file stays where it is, to be looked at anew.
  let same: boolean;
  try {
    const [here, there] = await Promise.all([lstat(src), lstat(dest)]);
    same = here.ino === there.ino && here.dev === there.dev;
  } catch (error) {
    await unlink(dest).catch(() => undefined);
    if (isVanished(error)) return 'vanished';
    throw error;
  }
  if (!same) {
    await unlink(dest).catch(() => undefined);
    return 'vanished';
  }
  try {
    await unlink(src);
  } catch (error) {
    // Someone else moved src away between our link and our unlink: they own it, drop our copy.
    await unlink(dest).catch(() => undefined);
    if (isVanished(error)) return 'vanished';
    throw error;
  }
  return 'moved';
}

async function moveByRename(
  src: string,
  destDir: string,
  name: string,
  firstAttempt: number,
  options: MoveOptions,
): Promise<string | null> {
  for (let attempt = firstAttempt; ; attempt += 1) {
    const dest = join(destDir, suffixedName(name, attempt));
    const moved = await renameIfFree(src, dest, () => exists(dest));
    if (moved === 'taken') {
      if (options.exact === true) return null;
      continue;
    }
    if (moved === 'exdev') return moveByCopy(src, dest, destDir, name, attempt, options);
    if (moved !== null && options.fsync === true) await syncBoth(src, dest);
    return moved;
  }
}

/**
 * Rename `src` to `dest` unless a file has that name (`isTaken`), with the name reserved
 * meanwhile ({@link reserved}): the new path, null when `src` vanished, 'taken', or 'exdev' when
 * the folders are on different devices.
 */
function renameIfFree(
  src: string,
  dest: string,
  isTaken: () => Promise<boolean>,
  beforeMove?: (dest: string) => Promise<void>,
): Promise<string | null | 'taken' | 'exdev'> {
  return reserved(dest, async () => {
    let taken: boolean;
    try {
      taken = await isTaken();
    } catch (error) {
      throw toVaultIoError('stat', dest, error);
    }
    if (taken) return 'taken';
    await beforeMove?.(dest);
    try {
      await rename(src, dest);
      return dest;
    } catch (error) {
      if (errnoCode(error) === 'EXDEV') return 'exdev';
      if (isVanished(error) && !(await exists(src).catch(() => true))) return null;
      throw toVaultIoError('rename', src, error);
    }
  });
}

async function moveByCopy(
  src: string,
  dest: string,
  destDir: string,
  name: string,
  attempt: number,
  options: MoveOptions,
): Promise<string | null> {
  try {
    await copyFile(src, dest, constants.COPYFILE_EXCL);
  } catch (error) {
    if (errnoCode(error) === 'EEXIST') {
      if (options.exact === true) return null;
      return moveByRename(src, destDir, name, attempt + 1, options);
    }
    if (isVanished(error) && !(await exists(src))) return null;
    throw toVaultIoError('copy', src, error);
  }
  // The copy is on disk, under its name, before the original goes: a power cut between the two
  // must not leave neither.
  try {
    const copy = await open(dest, 'r');
    try {
      await copy.sync();
    } finally {
      await copy.close();
    }
    await fsyncDirectory(dirname(dest));
  } catch (error) {
    await unlink(dest).catch(() => undefined);
    throw toVaultIoError('fsync', dest, error);
  }
  try {
    await unlink(src);
  } catch (error) {
    await unlink(dest).catch(() => undefined);
    if (isVanished(error)) return null;
    throw toVaultIoError('unlink', src, error);
  }
  if (options.fsync === true) await syncBoth(src, dest);
  return dest;
}

async function syncBoth(src: string, dest: string): Promise<void> {
  await fsyncDirectory(dirname(dest));
  if (dirname(src) !== dirname(dest)) await fsyncDirectory(dirname(src));
}

/**
 * Whether anything is at `path` (not following a link there).
 * @throws the lstat's error other than a missing file or folder.
 */
export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (isVanished(error)) return false;
    throw error;
  }
}

/**
 * Finish a move that a kill cut short between its two steps: the note in `In_Progress/` has a
 * second name in one of the folders a note moves to, or in the folder a cut claim took it from
 * (its original name or a numbered suffix of it). That name is kept and the `In_Progress/` one
 * removed.
 * @param path absolute path of the note in `In_Progress/`, with more than one link.
 * @param layout the vault's folders.
 * @returns the note's path in its folder, or null when no second name was found there.
 */
export async function recoverInterruptedMove(
  path: string,
  layout: VaultLayout,
): Promise<string | null> {
  let ino: number;
  let dev: number;
  try {
    const here = await lstat(path);
    ino = here.ino;
    dev = here.dev;
  } catch (error) {
    if (isVanished(error)) return null;
    throw toVaultIoError('stat', path, error);
  }
  const name = readClaimedName(basename(path)).original;
  // The inbox and Approved/ too: a claim of a name too long for the claim tag is a link, then an
  // unlink, and a kill between the two left the note in both (refused in each for its two names,
  // stuck for good). The claim had not finished, so nothing ran: the name in the folder it came
  // from is kept, and the note is claimed again from there.
  for (const dir of [
    layout.done,
    layout.failed,
    layout.pending,
    layout.rejected,
    layout.inbox,
    layout.approved,
  ]) {
    // A second name found through a link would be a file outside the vault's folders: only the
    // In_Progress/ name is vaultd's then, and it is kept.
    if (
      !(await assertInsideVault(layout.root, dir).then(
        () => true,
        () => false,
      ))
    )
      continue;
    // A handful of names: the move takes the first free suffix, and a crash stops at one.
    const candidates: string[] = [];
    for (let attempt = 0; attempt < 64; attempt++) candidates.push(suffixedName(name, attempt));
    // A long name's claim took a number when In_Progress/ had the name (`<name>-1.md` there,
    // `<name>.md` in the inbox): the inbox's and Approved/'s long names are looked at too.
    const claimedByLink =
      (dir === layout.inbox || dir === layout.approved) && isTooLong(claimedName(name));
    const found = await sameFileIn(dir, candidates, ino, dev, claimedByLink);
    if (found !== null) {
      try {
        await unlink(path);
      } catch (error) {
        if (!isVanished(error)) throw toVaultIoError('unlink', path, error);
      }
      return found;
    }
  }
  return null;
}

/**
 * The path in `dir` of the file (`ino`, `dev`) among `names` (tried in order, up to the first
 * missing), and among the folder's names too long for a claim tag when `longNames`; null when none.
 */
async function sameFileIn(
  dir: string,
  names: readonly string[],
  ino: number,
  dev: number,
  longNames: boolean,
): Promise<string | null> {
  const isIt = async (candidate: string): Promise<boolean | null> => {
    try {
      const found = await stat(candidate);
      return found.ino === ino && found.dev === dev;
    } catch (error) {
      if (isVanished(error)) return null;
      throw toVaultIoError('stat', candidate, error);
    }
  };
  for (const name of names) {
    const candidate = join(dir, name);
    const same = await isIt(candidate);
    if (same === null) break;
    if (same) return candidate;
  }
  if (!longNames) return null;
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (error) {
    if (isVanished(error)) return null;
    throw toVaultIoError('list', dir, error);
  }
  for (const entry of entries) {
    if (!isTooLong(claimedName(entry)) || names.includes(entry)) continue;
    const candidate = join(dir, entry);
    if ((await isIt(candidate)) === true) return candidate;
  }
  return null;
}

/**
 * The final move of a claimed note into the folder of its outcome, in one step: the first free
 * name (`task.md`, `task-1.md`…) is found, then the note is renamed to it, so there is no moment
 * when the note is in two places (a kill between the two steps of a link-then-unlink move would
 * leave two names). vaultd's own moves reserve the name they take (two notes of one name finishing
 * together get `task.md` and `task-1.md`); only a file another program creates under that very
 * name between the check and the rename could be replaced.
 * @param src absolute path of the note in `In_Progress/`.
 * @param destDir the target folder, which must exist and be the vault's own folder of that name
 *   (checked first: never a symbolic link, nor under one; see {@link assertInsideVault}).
 * @param name the wanted name.
 * @param vault absolute path of the vault.
 * @param beforeMove called with the name the note gets, while it is reserved, before the note
 *   moves there: what must be recorded of the move before a stop can come between it and the
 *   record (the approval requests of a note that goes to wait, bound to the name it gets).
 * @returns the new path, or null when `src` vanished.
 * @throws VaultIoError for any other failure (code `EOUTSIDE` when `destDir` is refused); the note
 *   is then where it was.
 */
export async function moveClaimed(
  src: string,
  destDir: string,
  name: string,
  vault: string,
  beforeMove?: (dest: string) => Promise<void>,
): Promise<string | null> {
  // The folder's check and the look for a note of that name in it are independent: both at once
  // (a note moves only when the folder passed; a look through a link only reads a name's stat).
  // The look is taken only if no move of ours to that name ended meanwhile: one that ended after
  // the look started and before our reservation took the name the look found free.
  const early = lookEarly(join(destDir, name));
  try {
    await assertInsideVault(vault, destDir);
    for (let attempt = 0; ; attempt += 1) {
      const dest = join(destDir, suffixedName(name, attempt));
      const moved = await renameIfFree(
        src,
        dest,
        () => (attempt === 0 && !early.look.stale ? early.look.taken : exists(dest)),
        beforeMove,
      );
      if (moved === 'taken') continue;
      if (moved === 'exdev') return moveNoOverwrite(src, destDir, name);
      return moved;
    }
  } finally {
    early.done();
  }
}
