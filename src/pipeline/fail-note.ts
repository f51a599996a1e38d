import { basename } from 'node:path';
import { RESULTS_HEADING, appendedSection, renderResult } from '../note/index.ts';
import type { ErrorCode } from '../protocol/errors.ts';
import type { ToolResult } from '../protocol/types.ts';
import { claimNote, moveClaimed, moveNoOverwrite, readClaimedName } from '../vault/index.ts';
import { appendInVault } from '../vault/vault-writer.ts';
import type { PipelineContext } from './context.ts';
import { makePipelineResult } from './make-result.ts';
import { noteKey } from './note-key.ts';
import { writtenNoteCap } from './read-note.ts';

/**
 * The last resort for a claimed note whose processing failed (a note too complex to parse, a
 * bug, a disk error): move it to `Failed/` with the reason appended, so it is neither lost nor
 * stuck in `In_Progress/`. Appending, not rewriting: the note's text must survive as it is.
 * @param readable whether the note may be read and parsed to place the error (false for one over
 *   the size cap or too complex to parse): a fence it leaves open is then closed first.
 */
export async function failClaimed(
  ctx: PipelineContext,
  path: string,
  error: unknown,
  code: ErrorCode,
  readable = true,
): Promise<void> {
  const key = noteKey(ctx, path);
  const reason = ctx.redact(error instanceof Error ? error.message : String(error));
  ctx.logger.error({ err: error, note: key, code }, 'note failed as a whole; moving it to Failed');
  if (ctx.shutdown.aborted) return;
  const message =
    code === 'EXECUTION_FAILED'
      ? `vaultd could not finish this note: ${reason}. Calls with side effects that already ran are recorded and never run again: move the note back to the inbox to have their results written here; calls that did not run will run then.`
      : reason;
  const result = makePipelineResult({
    id: 'note_error',
    name: 'vaultd',
    status: 'error',
    code,
    message,
  });
  logPseudo(ctx, key, code, message);
  // Appended, not rewritten: the note's text stays byte for byte, and a note too large to parse is
  // never read whole. Never through a link the note may have been replaced with.
  try {
    await appendInVault(
      ctx.layout.root,
      path,
      (text) => errorSection(ctx, key, text, result),
      readable ? writtenNoteCap(ctx.config.max_note_bytes) : 0,
    );
  } catch (appendError) {
    ctx.logger.error({ err: appendError, note: key }, 'could not append the error to the note');
  }
  try {
    await moveClaimed(
      path,
      ctx.layout.failed,
      readClaimedName(basename(path)).original,
      ctx.layout.root,
    );
  } catch (moveError) {
    ctx.logger.error(
      { err: moveError, note: key },
      'could not move the note to Failed; it stays in In_Progress',
    );
  }
}

/**
 * What to append to a failed note for its error: a `## Tool Results` section, or the result added
 * to the section that ends the note. A code fence, HTML block or Obsidian comment the note leaves
 * open is closed first, or the error would be read as its content (and the fence's opener would
 * pair with the result's closing line). A note that is not read (over the cap, not UTF-8) or not
 * parsed gets the section as it is.
 * @param key the note's name in the log.
 * @param text the note's text, null when not read.
 */
async function errorSection(
  ctx: PipelineContext,
  key: string,
  text: string | null,
  result: ToolResult,
): Promise<string> {
  const plain = `\n\n## ${RESULTS_HEADING}\n\n${renderResult(result)}\n`;
  if (text === null) return plain;
  try {
    const edited = (await ctx.notes.edit(text, { results: [result], frontMatter: {} })).text;
    if (edited.length > text.length && edited.startsWith(text)) return edited.slice(text.length);
    // Results there already, not at the end: a section of its own after them.
    return ctx.notes.isInline(text)
      ? appendedSection(text, RESULTS_HEADING, renderResult(result))
      : plain;
  } catch (error) {
    // The parser itself may be why the note failed.
    ctx.logger.warn({ err: error, note: key }, 'could not read the failed note for its error');
    return plain;
  }
}

/** One line of the execution log for a result, and a warning in the daemon's log when it failed. */
export function logResult(
  ctx: PipelineContext,
  note: string,
  result: ToolResult,
  parameters: Record<string, unknown> | undefined,
): void {
  const original = result.metadata.original_arguments;
  ctx.executionLog.append({
    call_id: result.id,
    tool: result.name,
    note,
    parameters: parameters ?? {},
    ...(original === undefined ? {} : { original_parameters: original }),
    status: result.status,
    error: result.error,
    execution_time_ms: result.metadata.execution_time_ms,
    timestamp: result.metadata.finished_at,
    approved_by: result.metadata.approved_by,
    ...(result.metadata.decided_by === undefined ? {} : { decided_by: result.metadata.decided_by }),
    ...(result.metadata.replay === undefined ? {} : { replay: true }),
  });
  if (result.success) return;
  ctx.logger.warn(
    { note, call: result.id, tool: result.name, code: result.error?.code },
    result.error?.message ?? 'call failed',
  );
}

/**
 * A note that mentions `tool_call` but cannot be parsed: too large (an error result appended, to
 * Failed/), or binary or not UTF-8 (moved to Failed/ unchanged, the reason logged).
 */
export async function failUnreadable(
  ctx: PipelineContext,
  path: string,
  read: { kind: 'too_large' | 'binary' | 'not_utf8'; size?: number },
  written = false,
): Promise<void> {
  const key = noteKey(ctx, path);
  if (read.kind !== 'too_large') {
    // Writing results into a binary file would corrupt it: move it aside untouched and say why.
    const claimed = await claimNote(path, ctx.layout, ctx.active);
    if (claimed === null) return;
    const moved = await moveNoOverwrite(claimed, ctx.layout.failed, basename(path), {
      vault: ctx.layout.root,
    }).finally(() => ctx.active.delete(claimed));
    const code = 'NOTE_NOT_TEXT';
    ctx.logger.error(
      { note: key, moved_to: moved && noteKey(ctx, moved), code },
      'note is binary or not UTF-8: moved to Failed unread',
    );
    logPseudo(
      ctx,
      key,
      code,
      'the note is binary or not valid UTF-8; it was moved to Failed/ unchanged',
    );
    return;
  }
  const claimed = await claimNote(path, ctx.layout, ctx.active);
  if (claimed === null) return;
  // Not parsed, so the error is appended rather than spliced: the note's text survives as is.
  const message = written
    ? `the note is ${read.size ?? 0} bytes with the results vaultd wrote into it, over the ${writtenNoteCap(ctx.config.max_note_bytes)}-byte cap of such notes (twice config max_note_bytes); its calls waiting for a decision were not run. Raise max_note_bytes and move the note back to the inbox (a human is asked again), or write the calls into a new note`
    : `the note is ${read.size ?? 0} bytes, over the ${ctx.config.max_note_bytes}-byte cap (config max_note_bytes); split it into smaller notes`;
  try {
    await failClaimed(ctx, claimed, new Error(message), 'NOTE_TOO_LARGE', false);
  } finally {
    ctx.active.delete(claimed);
  }
}

function logPseudo(ctx: PipelineContext, note: string, code: ErrorCode, message: string): void {
  ctx.executionLog.append({
    call_id: 'note',
    tool: 'vaultd',
    note,
    parameters: {},
    status: 'error',
    error: { code, message, recoverable: false },
    execution_time_ms: 0,
    timestamp: new Date().toISOString(),
    approved_by: null,
  });
}
