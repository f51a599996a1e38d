import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { readApprovalSection } from '../approval/index.ts';
import type { VaultLayout } from '../vault/index.ts';
import { listNotes } from '../vault/scan.ts';

/** Notes per state folder and the calls waiting for a human, as last counted. */
export interface VaultSnapshot {
  readonly at: string;
  readonly notes: Readonly<Record<string, number>>;
  readonly pending: readonly { note: string; calls: readonly { id: string; tool: string }[] }[];
}

/**
 * Count the notes of every state folder and read the pending approvals. Archives can hold
 * hundreds of thousands of notes, so this runs in the background on a timer, never at start-up
 * or per event.
 * @param layout the vault's folders.
 */
export async function takeVaultSnapshot(layout: VaultLayout): Promise<VaultSnapshot> {
  const folders = {
    inbox: layout.inbox,
    in_progress: layout.inProgress,
    pending_approval: layout.pending,
    approved: layout.approved,
    rejected: layout.rejected,
    done: layout.done,
    failed: layout.failed,
  };
  const notes: Record<string, number> = {};
  for (const [state, dir] of Object.entries(folders)) notes[state] = (await listNotes(dir)).length;
  const pending: { note: string; calls: { id: string; tool: string }[] }[] = [];
  for (const path of await listNotes(layout.pending)) {
    const text = await readFile(path, 'utf8').catch(() => '');
    const calls = [...readApprovalSection(text).decisions.values()].map((d) => ({
      id: d.id,
      tool: d.name ?? '?',
    }));
    pending.push({ note: basename(path), calls });
  }
  return { at: new Date().toISOString(), notes, pending };
}
