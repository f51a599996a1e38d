import { dirname } from 'node:path';
import {
  renderApprovalSectionSliced,
  APPROVAL_HEADING as APPROVAL_SECTION,
  APPROVAL_MARKER,
  PENDING_CALL_KEY,
  type PendingCall,
} from '../approval/index.ts';
import type { EditedText, WriteBackEdit } from '../note/index.ts';
import type { ParsedNote } from '../note/types.ts';
import type { ToolResult } from '../protocol/types.ts';
import { yieldAtItem, yieldWhenSpent } from '../protocol/slice.ts';
import { lstat } from '../vault/fs-calls.ts';
import { assertInsideVault, writeInVault } from '../vault/vault-writer.ts';
import type { PipelineContext } from './context.ts';
import { noteKey } from './note-key.ts';
import { readNote, writtenNoteCap } from './read-note.ts';

/** The heading of the section where pending calls wait for a human. */
const APPROVAL_HEADING = `## ${APPROVAL_SECTION}`;

/** What tells one version of a note's file from another without reading it. */
export interface NoteStamp {
  readonly mtimeMs: number;
  readonly size: number;
}

/** What {@link writeBack} wrote. */
export interface WrittenNote {
  /** The note's text now. */
  readonly text: string;
  /** Its modification time and size now; looked up only when `changedExternally`. */
  readonly stamp: NoteStamp | undefined;
  /** Whether someone else changed the note while its calls ran (the edit went into their text). */
  readonly changedExternally: boolean;
}

/**
 * Write a note's new results, its Approval section and its front-matter keys into the note as it
 * is on disk now (a human may have edited it while the calls ran), atomically, through the vault's
 * one writer.
 * @returns what was written, or null when the note became unreadable meanwhile.
 */
export async function writeBack(
  ctx: PipelineContext,
  path: string,
  originalText: string,
  stamp: NoteStamp,
  parsed: ParsedNote,
  results: readonly ToolResult[],
  pending: readonly PendingCall[],
  sideEffects: boolean,
  unfinished = false,
): Promise<WrittenNote | null> {
  // Results go into the note as it is on disk now: a human may have edited it while calls ran.
  // The edit is made on the text we parsed; an unchanged modification time and size just before
  // the write mean that text is still the file's, without reading it again. Otherwise the newer
  // text is read and edited instead.
  let current = originalText;
  const counts = await countResults(parsed, results);
  const edit: WriteBackEdit = {
    results,
    order: [...parsed.calls, ...parsed.invalid]
      .sort((a, b) => a.start.offset - b.start.offset)
      .map((c) => c.id),
    section: {
      heading: APPROVAL_HEADING,
      markers: [APPROVAL_MARKER, `"${PENDING_CALL_KEY}"`],
      body:
        pending.length > 0
          ? await renderApprovalSectionSliced(
              pending,
              {
                approvedFolder: ctx.config.folders.approved,
                rejectedFolder: ctx.config.folders.rejected,
                vaultDecisions: ctx.config.approval.vault_decisions,
              },
              yieldWhenSpent,
            )
          : null,
    },
    frontMatter: {
      status: unfinished
        ? 'in_progress'
        : pending.length > 0
          ? 'pending_approval'
          : // The folder's rule (chooseTarget): rejected only without errors; a note of a failed
            // and a rejected call is filed in Failed/, and said `failed` (it said `rejected`).
            counts.rejected > 0 && counts.errors === 0
            ? 'rejected'
            : counts.errors > 0 || counts.rejected > 0
              ? 'failed'
              : 'done',
      processed_at: new Date().toISOString(),
      tool_calls:
        parsed.calls.length +
        parsed.invalid.length +
        (results.some((r) => r.id === 'front_matter') ? 1 : 0),
      tool_errors: counts.errors + counts.rejected,
    },
  };
  for (;;) {
    const edited = await ctx.notes.edit(current, edit);
    // The check of In_Progress/ and the look at the note are independent thread-pool jobs: both
    // at once, right before the write, which waits for the check.
    const folderChecked = assertInsideVault(ctx.layout.root, dirname(path));
    folderChecked.catch(() => undefined); // awaited (and so reported) only if the note is written
    const before = await lstat(path);
    if (before.mtimeMs !== stamp.mtimeMs || before.size !== stamp.size) {
      // Edited since we read it: edit the newer text instead.
      const read = await readNote(path, writtenNoteCap(ctx.config.max_note_bytes));
      if (read.kind !== 'text') {
        ctx.logger.error(
          { note: noteKey(ctx, path), reason: read.kind },
          'note changed into something unreadable while its calls ran',
        );
        return null;
      }
      current = read.text;
      stamp = read;
      continue;
    }
    const changedExternally = current !== originalText;
    if (edited.unchanged) return { text: current, stamp, changedExternally };
    // The folder's fsync makes the rename durable; without side effects a power cut that loses it
    // only means the note's read-only calls run again, so it is skipped. A large note's edit comes
    // back from the worker as bytes, written as they are; its text is decoded only if asked for.
    await writeInVault(ctx.layout.root, path, edited.bytes, {
      fsyncDir: sideEffects,
      mode: before.mode & 0o7777,
      folderChecked,
    });
    // Only a note someone else changed goes another round, which needs its stamp after our write.
    if (!changedExternally) return written(edited, undefined, false);
    const after = await lstat(path);
    return written(edited, { mtimeMs: after.mtimeMs, size: after.size }, true);
  }
}

/** What was written; the text is decoded from the written bytes only if asked for. */
function written(
  edited: EditedText,
  stamp: NoteStamp | undefined,
  changedExternally: boolean,
): WrittenNote {
  return {
    get text() {
      return edited.text;
    },
    stamp,
    changedExternally,
  };
}

async function countResults(
  parsed: ParsedNote,
  results: readonly ToolResult[],
): Promise<{ errors: number; rejected: number }> {
  let errors = 0;
  let rejected = 0;
  let i = 0;
  // Only the results of the blocks the note holds now count: a block fixed after it failed (a
  // broken one given an id from its text) is a new call, and the old block's error result, left
  // in the note, would fail the note again whatever the new call did.
  const current = new Set<string>();
  for (const block of [...parsed.calls, ...parsed.invalid]) {
    await yieldAtItem(i++);
    current.add(block.id);
  }
  const statuses = new Map<string, string>();
  for (const [id, found] of parsed.results) {
    await yieldAtItem(i++);
    if (current.has(id)) statuses.set(id, found.status);
  }
  for (const result of results) {
    await yieldAtItem(i++);
    statuses.set(result.id, result.status);
  }
  for (const status of statuses.values()) {
    if (status === 'rejected') rejected++;
    else if (status !== 'success') errors++;
  }
  return { errors, rejected };
}

/** The folder a processed note goes to, from its results and the calls still waiting. */
export async function chooseTarget(
  parsed: ParsedNote,
  results: readonly ToolResult[],
  pending: readonly PendingCall[],
): Promise<'done' | 'failed' | 'pending' | 'rejected'> {
  if (pending.length > 0) return 'pending';
  const counts = await countResults(parsed, results);
  if (counts.rejected > 0 && counts.errors === 0) return 'rejected';
  if (counts.errors > 0 || counts.rejected > 0) return 'failed';
  return 'done';
}
