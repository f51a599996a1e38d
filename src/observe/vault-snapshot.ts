import { readdir, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { readApprovalSection, type ApprovalSectionRead } from '../approval/index.ts';
import { CONFIG_DEFAULTS } from '../config/defaults.ts';
import { readNote, writtenNoteCap } from '../pipeline/read-note.ts';
import type { VaultLayout } from '../vault/index.ts';
import { isNoteFile } from '../vault/note-files.ts';
import { listNotes } from '../vault/scan.ts';

/** Notes per state folder and the calls waiting for a human, as last counted. */
export interface VaultSnapshot {
  readonly at: string;
  readonly notes: Readonly<Record<string, number>>;
  readonly pending: readonly {
    note: string;
    calls: readonly { id: string; tool: string; requested_at: string | null }[];
  }[];
}

/** The folders that grow without bound: counted in full rarely, and kept up by events between. */
export const ARCHIVE_STATES: readonly string[] = ['done', 'failed', 'rejected'];

/**
 * Count the notes of every state folder and read the pending approvals. Archives can hold
 * hundreds of thousands of notes, so this runs in the background on a timer, never at start-up
 * or per event.
 * @param layout the vault's folders.
 * @param archives counts of archive folders the caller keeps up itself (others are counted), or
 *   `skip` to leave the archives out.
 * @param readSection reads a pending note's Approval section (the daemon's note worker, which
 *   reads a large note off the main thread and keeps recent reads); in this thread by default.
 * @param maxNoteBytes a pending note larger than this is not read (its calls are not listed):
 *   vaultd reads none larger, and an agent can put a file of any size there, which would be read
 *   whole at every refresh (default: the cap of the default config).
 */
export async function takeVaultSnapshot(
  layout: VaultLayout,
  archives?: Readonly<Record<string, number>> | 'skip',
  readSection?: (text: string) => Promise<ApprovalSectionRead>,
  maxNoteBytes = writtenNoteCap(CONFIG_DEFAULTS.max_note_bytes),
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
  const pending: {
    note: string;
    calls: { id: string; tool: string; requested_at: string | null }[];
  }[] = [];
  for (const path of await listNotes(layout.pending)) {
    // Read as the pipeline reads it (capped, never through a link, never waiting on a fifo
    // swapped in since the listing): what vaultd would not read lists no calls.
    const read = await readNote(path, maxNoteBytes).catch(() => undefined);
    const text = read?.kind === 'text' ? read.text : '';
    const section = readSection === undefined ? readApprovalSection(text) : await readSection(text);
    const calls = [...section.decisions.values()].map((d) => ({
      id: d.id,
      tool: d.name ?? '?',
      requested_at: d.requestedAt,
    }));
    pending.push({ note: basename(path), calls });
  }
  return { at: new Date().toISOString(), notes, pending };
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
