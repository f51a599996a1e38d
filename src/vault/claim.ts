import { basename, dirname, extname, join } from 'node:path';
import { lstat, rename } from './fs-calls.ts';
import { errnoCode, isVanished, toVaultIoError } from './fs-errors.ts';
import { isTooLong } from './file-names.ts';
import type { VaultLayout } from './layout.ts';
import { moveNoOverwrite } from './move.ts';
import { isProcessAlive, selfIdentity, type ProcessIdentity } from './process-identity.ts';
import { assertInsideVault } from './vault-writer.ts';

// `task.vaultd-<pid>-<start>-<boot>-<n>.md`: the pid, start time and boot of the claiming process
// (base 36, boot as 4 hex digits) and a counter, so the name cannot exist yet and tells whose claim
// it is.
const CLAIM_TAG = /\.vaultd-([0-9a-z]+)-([0-9a-z]*)-([0-9a-f]{0,4})-([0-9a-z]+)$/;

let counter = 0;

/** A note's name in `In_Progress/`, and what it tells. */
export interface ClaimName {
  /** The name the note had before it was claimed, for the folder it goes to next. */
  readonly original: string;
  /** The process that claimed it, when the name carries a claim tag. */
  readonly owner: ProcessIdentity | null;
}

/**
 * The unique name a note gets in `In_Progress/` when this process claims it.
 * @param name the note's file name.
 */
export function claimedName(name: string): string {
  const self = selfIdentity();
  const ext = extname(name);
  const stem = ext === '' ? name : name.slice(0, -ext.length);
  const start = self.start === null ? '' : self.start.toString(36);
  const tag = `${self.pid.toString(36)}-${start}-${self.boot.slice(0, 4)}-${(counter++).toString(36)}`;
  return `${stem}.vaultd-${tag}${ext}`;
}

/**
 * Read a name in `In_Progress/`: the original name (the last claim tag removed) and the claiming
 * process. A name without a tag (a note claimed by an older vaultd) is its own original.
 * @param name the file name in `In_Progress/`.
 */
export function readClaimedName(name: string): ClaimName {
  const ext = extname(name);
  const stem = ext === '' ? name : name.slice(0, -ext.length);
  const match = CLAIM_TAG.exec(stem);
  if (match === null) return { original: name, owner: null };
  const self = selfIdentity();
  const boot = match[3] ?? '';
  return {
    original: `${stem.slice(0, match.index)}${ext}`,
    owner: {
      pid: parseInt(match[1] ?? '0', 36),
      hostname: self.hostname,
      start: match[2] === '' ? null : parseInt(match[2] ?? '0', 36),
      // Only the first four hex digits are kept: compare on those.
      boot: boot === '' || self.boot === '' ? '' : self.boot.startsWith(boot) ? self.boot : boot,
    },
  };
}

/**
 * Whether a note in `In_Progress/` is being worked on by another live vaultd process (one that
 * took over after the lock was lost, say): such a note must not be resumed.
 * @param name the file name in `In_Progress/`.
 */
export function isClaimedByOther(name: string): boolean {
  const { owner } = readClaimedName(name);
  if (owner === null) return false;
  const self = selfIdentity();
  if (owner.pid === self.pid && owner.start === self.start) return false;
  return isProcessAlive(owner);
}

/**
 * Claim a note: one `rename` into `In_Progress/` under a name that cannot exist yet, so there is
 * no moment when the note is in two places and of two claimers exactly one wins. On file systems
 * that cannot rename across the folders (EXDEV) it falls back to a no-overwrite move. Nothing moves
 * unless `In_Progress/` and the note's own folder are the vault's own folders, with no symbolic
 * link on the way (an agent's link there would carry the note out of the vault, or bring a file
 * from outside it in).
 * @param src absolute path of the note (in the inbox or a decision folder).
 * @param layout the vault's folders.
 * @param held the paths this process works on (`ctx.active`): the claimed path is in it from
 *   before the rename, so a scan of `In_Progress/` never finds the note unheld and takes it for a
 *   note left behind (the caller removes it when done; a failed claim removes it here).
 * @param beforeMove called with the claim's path before the note moves there: what must be
 *   recorded of the claim before a stop can come between the move and the record (the note's
 *   approval requests, bound to the claim). When it throws, the note is not moved.
 * @returns the note's new absolute path, or null when it vanished (another process took it).
 * @throws VaultIoError for any other failure (code `EOUTSIDE` when `In_Progress/` or the note's
 *   folder is refused); the note is then where it was.
 */
export async function claimNote(
  src: string,
  layout: VaultLayout,
  held?: Set<string>,
  beforeMove?: (dest: string) => Promise<void>,
): Promise<string | null> {
  // The folder the note comes from is checked as the one it goes to: an inbox an agent replaced
  // with a link to a folder outside the vault would have vaultd take files from there.
  const sourceChecked = assertInsideVault(layout.root, dirname(src));
  sourceChecked.catch(() => undefined); // awaited below, beside the check of In_Progress/
  const tagged = claimedName(basename(src));
  if (isTooLong(tagged)) {
    await sourceChecked;
    return claimUntagged(src, layout, held, beforeMove);
  }
  const dest = join(layout.inProgress, tagged);
  held?.add(dest);
  try {
    await Promise.all([sourceChecked, assertInsideVault(layout.root, layout.inProgress)]);
    await beforeMove?.(dest);
    await rename(src, dest);
    return dest;
  } catch (error) {
    held?.delete(dest);
    if (isVanished(error)) {
      // ENOENT also comes from a missing In_Progress/ (the vault moved away): tell the two apart.
      const still = await lstat(src).then(
        () => true,
        () => false,
      );
      if (!still) return null;
    }
    if (errnoCode(error) === 'EXDEV') {
      const moved = await moveNoOverwrite(src, layout.inProgress, basename(dest));
      if (moved !== null) held?.add(moved);
      return moved;
    }
    throw toVaultIoError('claim', src, error);
  }
}

/**
 * Claim a note whose name is too long to carry the claim tag (over about 225 bytes: 75 Chinese
 * characters): moved into `In_Progress/` under its own name, without overwriting a note there,
 * so it keeps its name in the folder it goes to next. While a note of that name is there it is
 * not claimed (null, as for a note taken by another process; the next scan looks again): a
 * numbered name made the name its calls are keyed by another one, and after a crash the calls of
 * a re-saved note, cut off ones included, ran again. Without the
 * tag the name does not tell which process claimed it, which only matters when two vaultd
 * processes work on one vault at once, and the vault's lock keeps that from happening. A claim
 * under a tagged name failed with ENAMETOOLONG: the note stayed in the inbox, never run and
 * never told why, its error logged at every scan.
 */
async function claimUntagged(
  src: string,
  layout: VaultLayout,
  held?: Set<string>,
  beforeMove?: (dest: string) => Promise<void>,
): Promise<string | null> {
  const expected = join(layout.inProgress, basename(src));
  // Held: a note of that name is being worked on (and this claim must not drop its hold).
  if (held?.has(expected) === true) return null;
  held?.add(expected);
  try {
    await beforeMove?.(expected);
    const moved = await moveNoOverwrite(src, layout.inProgress, basename(src), {
      vault: layout.root,
      exact: true,
    });
    if (moved === null) held?.delete(expected);
    return moved;
  } catch (error) {
    held?.delete(expected);
    throw error;
  }
}
