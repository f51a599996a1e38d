import { basename, dirname } from 'node:path';
import { isExpired, readApprovalSection, type PendingCall } from '../approval/index.ts';
import { mightHaveToolCall, NoteTooComplexError } from '../note/index.ts';
import type { ParsedNote } from '../note/types.ts';
import { claimNote, moveNoOverwrite } from '../vault/index.ts';
import type { FolderKind } from '../vault/watcher.ts';
import type { PipelineContext } from './context.ts';
import { failClaimed, failUnreadable, logResult } from './fail-note.ts';
import type { JobOutcome } from './note-queue.ts';
import { makePipelineResult } from './make-result.ts';
import { noteKey } from './note-key.ts';
import { readNote } from './read-note.ts';
import { requestsOf, settleCalls, type Ordered, type SettleOptions } from './settle-calls.ts';
import { chooseTarget, writeBack, type NoteStamp } from './write-back.ts';

/** How a claimed note came to be worked on. */
interface WorkOptions extends SettleOptions {
  /** Modification time and size of the text that was parsed, to tell whether it changed since. */
  readonly stamp: NoteStamp;
}

/**
 * Look at one note in a watched folder and do what its folder asks: run the calls of an inbox
 * note, apply a human's decisions to a pending note. Never throws for bad note content.
 * @param ctx the pipeline context.
 * @param path absolute path of the note.
 * @param kind the folder it is in.
 * @returns a request to look again later when the note seems unfinished.
 */
export async function handleNote(
  ctx: PipelineContext,
  path: string,
  kind: FolderKind,
): Promise<JobOutcome> {
  const read = await readNote(path, ctx.config.max_note_bytes);
  if (read.kind === 'gone') return;
  if (read.kind === 'not_a_file') {
    ctx.logger.warn(
      { note: noteKey(ctx, path) },
      'not a regular file (symlink, fifo?): left alone',
    );
    return;
  }
  if (read.kind !== 'text') {
    if (kind === 'inbox' && read.mentionsToolCall) await failUnreadable(ctx, path, read);
    return;
  }
  if (kind === 'inbox') {
    if (!mightHaveToolCall(read.text)) return;
    const parsed = await parseOrFail(ctx, path, read.text, true);
    if (parsed === null) return;
    if (parsed.calls.length === 0 && parsed.invalid.length === 0) return;
    const age = Date.now() - read.mtimeMs;
    if (looksUnfinished(parsed) && age < ctx.config.settle_ms) {
      return { retryAfterMs: ctx.config.settle_ms - age + 10 };
    }
    const claimed = await claim(ctx, path);
    if (claimed === null) return;
    await work(ctx, claimed, read.text, parsed, {
      resume: false,
      defaultDecision: 'none',
      claimedFrom: [dirname(path)],
      stamp: read,
    });
    return;
  }
  // A decision folder: only notes with pending calls are vaultd's business; a note resting in
  // Rejected/ has none left.
  const section = readApprovalSection(read.text);
  if (!section.found) return;
  const defaultDecision = kind === 'approved' ? 'approve' : kind === 'rejected' ? 'reject' : 'none';
  const decided = [...section.decisions.values()].some((d) => d.decision !== 'none');
  // The time a call started waiting is vaultd's record, not the note's text, which anyone may edit.
  const requests = requestsOf(ctx);
  const expired = [...section.decisions.values()].some((d) => {
    const since = requests.requestedAt(d.id) ?? d.requestedAt;
    return since === null || isExpired(since, ctx.config.approval.expire_after_ms);
  });
  if (defaultDecision === 'none' && !decided && !expired) return;
  const parsed = await parseOrFail(ctx, path, read.text, true);
  if (parsed === null) return;
  const claimed = await claim(ctx, path);
  if (claimed === null) return;
  await work(ctx, claimed, read.text, parsed, {
    resume: false,
    defaultDecision,
    claimedFrom: [dirname(path)],
    stamp: read,
  });
}

/**
 * Finish a note left in `In_Progress/` by a crash or a hard stop, as SPEC section 6 says.
 * @param ctx the pipeline context.
 * @param path absolute path of the note in `In_Progress/`.
 */
export async function resumeNote(ctx: PipelineContext, path: string): Promise<void> {
  const read = await readNote(path, ctx.config.max_note_bytes);
  if (read.kind === 'gone') return;
  if (read.kind !== 'text') {
    const moved = await moveNoOverwrite(path, ctx.layout.failed);
    ctx.logger.error(
      { note: noteKey(ctx, path), reason: read.kind },
      'unreadable note in In_Progress moved to Failed',
    );
    if (moved !== null) await ctx.ledger.release(noteKey(ctx, path));
    return;
  }
  ctx.logger.info({ note: noteKey(ctx, path) }, 'resuming note left in progress');
  const parsed = await parseOrFail(ctx, path, read.text, false);
  if (parsed === null) return;
  await work(ctx, path, read.text, parsed, {
    resume: true,
    defaultDecision: 'none',
    claimedFrom: [],
    stamp: read,
  });
}

/**
 * Parse a note (large ones off the main thread). A note too complex to parse within the deadline
 * is moved to `Failed/` with the reason, claiming it first when it is not claimed yet.
 * @returns the parsed note, or null when it was failed (or vanished).
 */
async function parseOrFail(
  ctx: PipelineContext,
  path: string,
  text: string,
  claimFirst: boolean,
): Promise<ParsedNote | null> {
  try {
    return await ctx.notes.parse(text);
  } catch (error) {
    if (!(error instanceof NoteTooComplexError)) throw error;
    const claimed = claimFirst ? await claim(ctx, path) : path;
    if (claimed !== null) await failClaimed(ctx, claimed, error, 'NOTE_TOO_COMPLEX');
    return null;
  }
}

async function claim(ctx: PipelineContext, path: string): Promise<string | null> {
  const claimed = await claimNote(path, ctx.layout);
  if (claimed !== null) {
    ctx.bus.emit('note.claimed', { note: noteKey(ctx, claimed), from: noteKey(ctx, path) });
  }
  return claimed;
}

/** True when a block that mentions `tool_call` is broken in a way a writer still at work leaves. */
function looksUnfinished(parsed: ParsedNote): boolean {
  return parsed.invalid.some((block) => !parsed.results.has(block.id));
}

async function work(
  ctx: PipelineContext,
  path: string,
  originalText: string,
  parsed: ParsedNote,
  options: WorkOptions,
): Promise<void> {
  try {
    await workUnguarded(ctx, path, originalText, parsed, options);
  } catch (error) {
    await failClaimed(ctx, path, error, 'EXECUTION_FAILED');
  }
}

async function workUnguarded(
  ctx: PipelineContext,
  path: string,
  originalText: string,
  parsed: ParsedNote,
  options: WorkOptions,
): Promise<void> {
  const key = noteKey(ctx, path);
  const results: Ordered[] = [];
  let pending: PendingCall[] = [];
  let ranArguments = new Map<string, Record<string, unknown>>();
  let sideEffects = false;
  const frontProblem = parsed.diagnostics.find((d) => d.code === 'UNSUPPORTED_FRONT_MATTER');

  if (frontProblem !== undefined) {
    // Without readable front-matter we cannot know the note's `allowed_tools`, so nothing runs.
    results.push({
      order: 0,
      result: makePipelineResult({
        id: 'front_matter',
        name: 'vaultd',
        status: 'error',
        code: 'UNSUPPORTED_FRONT_MATTER',
        message: `${frontProblem.message} (line ${frontProblem.start.line}); no call in this note was run`,
      }),
    });
  } else {
    const outcome = await settleCalls(ctx, key, originalText, parsed, parsed.data, options);
    results.push(...outcome.results);
    pending = outcome.pending;
    ranArguments = outcome.ranArguments;
    sideEffects = outcome.sideEffects;
  }

  results.sort((a, b) => a.order - b.order);
  if (ctx.shutdown.aborted) {
    // Shutting down past the grace period: the calls that finished keep their results, the ones
    // cut off get none, and the note stays claimed. The ledger has the intents of the cut-off
    // calls with side effects, so the next start writes them back as interrupted.
    const finished = results.map((r) => r.result).filter((r) => r.status !== 'interrupted');
    await writeBack(ctx, path, originalText, options.stamp, parsed, finished, pending, true, true);
    ctx.logger.warn({ note: key }, 'shutdown: note left in In_Progress for the next start');
    return;
  }

  const newResults = results.map((r) => r.result);
  const argumentsById = new Map(parsed.calls.map((c) => [c.id, c.arguments]));
  for (const result of newResults) {
    // The log names the arguments that ran: a human may have edited the agent's.
    logResult(ctx, key, result, ranArguments.get(result.id) ?? argumentsById.get(result.id));
    ctx.bus.emit('tool.result', { note: key, callId: result.id, tool: result.name, result });
  }

  const finalText = await writeBack(
    ctx,
    path,
    originalText,
    options.stamp,
    parsed,
    newResults,
    pending,
    sideEffects,
  );
  if (finalText === null) return;
  const target = chooseTarget(parsed, newResults, pending);
  const dir = {
    done: ctx.layout.done,
    failed: ctx.layout.failed,
    pending: ctx.layout.pending,
    rejected: ctx.layout.rejected,
  }[target];
  const moved = await moveNoOverwrite(path, dir, basename(path));
  if (moved === null) {
    ctx.logger.error({ note: key }, 'note vanished from In_Progress before it could be moved');
  } else {
    ctx.bus.emit('note.moved', {
      note: noteKey(ctx, moved),
      from: key,
      to: noteKey(ctx, moved),
      state: target,
    });
    if (target === 'pending') {
      ctx.bus.emit('approval.requested', {
        note: noteKey(ctx, moved),
        callIds: pending.map((p) => p.id),
        tools: pending.map((p) => p.name),
      });
    }
    ctx.logger.info(
      {
        note: noteKey(ctx, moved),
        state: target,
        results: newResults.length,
        pending: pending.length,
      },
      'note processed',
    );
  }
  await ctx.ledger.release(key);
}
