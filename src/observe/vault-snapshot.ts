import { readdir, stat } from 'node:fs/promises';
import type { ApprovalRequest } from '../approval/index.ts';
import { isWaiting } from '../approval/requests.ts';
import type { VaultLayout } from '../vault/index.ts';
import { isNoteFile } from '../vault/note-files.ts';

/** The calls waiting for a human in one note, as the request store holds them. */
export interface PendingNote {
  /** The note's vault-relative path, as vaultd recorded it when it asked (and moved it since). */
  readonly path: string;
  /** Oldest first: the call id, the tool and when vaultd asked. */
  readonly calls: readonly { id: string; tool: string; requested_at: string }[];
}

/** Notes per state folder and the calls waiting for a human, as last counted. */
export interface VaultSnapshot {
  readonly at: string;
  readonly notes: Readonly<Record<string, number>>;
  readonly pending: readonly PendingNote[];
}

/** The folders that grow without bound: counted in full rarely, and kept up by events between. */
export const ARCHIVE_STATES: readonly string[] = ['done', 'failed', 'rejected'];

/**
 * Count the notes of every state folder and list the calls waiting for a human. Archives can hold
 * hundreds of thousands of notes, so this runs in the background on a timer, never at start-up
 * or per event.
 * @param layout the vault's folders.
 * @param archives counts of archive folders the caller keeps up itself (others are counted), or
 *   `skip` to leave the archives out.
 * @param requests the approval requests (the daemon's store, or the file as `vaultd approvals`
 *   reads it): the waiting calls are its pending ones (see {@link pendingNotes}). No note is read.
 */
export async function takeVaultSnapshot(
  layout: VaultLayout,
  archives: Readonly<Record<string, number>> | 'skip' | undefined,
  requests: readonly ApprovalRequest[],
): Promise<VaultSnapshot> {
  const folders: Record<string, string> = {
    inbox: layout.inbox,
    in_progress: layout.inProgress,
    pending_approval: layout.pending,
    approved: layout.approved,
    rejected: layout.rejected,
    done: layout.done,
    failed: layout.failed,
  };
  const notes: Record<string, number> = {};
  for (const [state, dir] of Object.entries(folders)) {
    if (archives === 'skip' && ARCHIVE_STATES.includes(state)) continue;
    const known = archives === 'skip' ? undefined : archives?.[state];
    notes[state] = known ?? (await countNotes(dir));
  }
  const now = Date.now();
  return { at: new Date(now).toISOString(), notes, pending: pendingNotes(requests, now) };
}

/**
 * The calls waiting for a human, by note: the requests that are pending and not past their
 * expiry, as `vaultd approvals`, the HTTP API and the pending metric count them. The notes' text
 * is not read: an agent that can write `Pending_Approval/` deleted a note's Approval section to
 * hide a waiting call, or planted a note with a look-alike section naming a call that does not
 * exist, and the Dashboard and `vaultd status` showed that (review finding F3). A note in the
 * folder with no pending request lists no call.
 * @param requests the approval requests, in any state.
 * @param now the time expiries are compared with.
 * @returns one entry per recorded note path, in the order of their oldest call.
 */
export function pendingNotes(
  requests: readonly ApprovalRequest[],
  now = Date.now(),
): PendingNote[] {
  const waiting = requests
    .filter((r) => isWaiting(r, now))
    .sort((a, b) => a.requestedAt.localeCompare(b.requestedAt));
  const byNote = new Map<string, { id: string; tool: string; requested_at: string }[]>();
  for (const r of waiting) {
    const calls = byNote.get(r.note) ?? [];
    calls.push({ id: r.callId, tool: r.tool, requested_at: r.requestedAt });
    byNote.set(r.note, calls);
  }
  return [...byNote].map(([path, calls]) => ({ path, calls }));
}

/**
 * Count the notes of a folder from one listing of names (no stat, no sort, no paths kept): an
 * archive of 200,000 notes costs one `getdents` pass. Iterating a `Dir` instead costs a promise
 * per entry, several times the CPU.
 * @param dir absolute path of the folder; a missing folder has none.
 */
export async function countNotes(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let count = 0;
  for (const name of names) if (isNoteFile(name)) count++;
  return count;
}

/**
 * Whether the archive folders are large enough that counting them is felt (tens of thousands of
 * notes): told from the folders' own size, one `stat` each, without listing them.
 * @param layout the vault's folders.
 */
export async function archivesLookLarge(layout: VaultLayout): Promise<boolean> {
  let bytes = 0;
  for (const dir of [layout.done, layout.failed, layout.rejected]) {
    bytes += await stat(dir).then(
      (s) => s.size,
      () => 0,
    );
  }
  // A directory grows by one block per ~100 entries on ext4; 1 MiB is ~25,000 notes.
  return bytes > 1024 * 1024;
}
