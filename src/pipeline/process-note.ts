import { basename, dirname, join } from 'node:path';
import { mightHaveToolCall, NoteTooComplexError } from '../note/index.ts';
import type { ParsedNote } from '../note/types.ts';
import type { ToolResult } from '../protocol/types.ts';
import {
  claimNote,
  exists,
  isClaimedByOther,
  moveClaimed,
  moveNoOverwrite,
  readClaimedName,
  recoverInterruptedMove,
} from '../vault/index.ts';
import { lstat } from '../vault/fs-calls.ts';
import type { FolderKind } from '../vault/watcher.ts';
import { LIGHT_NOTE_CALLS, mentionsOfToolCall } from './call-budget.ts';
import { isInfrastructureError } from './conditions.ts';
import type { PipelineContext } from './context.ts';
import { failClaimed, failUnreadable, logResult } from './fail-note.ts';
import { makePipelineResult } from './make-result.ts';
import type { JobOutcome, SeenInfo } from './note-queue.ts';
import { noteKey } from './note-key.ts';
import { markNoteWritten } from './note-ledger.ts';
import {
  isSameNote,
  noteCap,
  readNote,
  releaseNote,
  sameFile,
  type NoteRead,
} from './read-note.ts';
import type { ApprovalRequest, MoveFolder } from '../approval/index.ts';
import { settleCalls, type NoteWork, type Ordered } from './settle-calls.ts';
import { yieldAtItem, yieldWhenSpent } from '../protocol/slice.ts';
import { chooseTarget, writeBack } from './write-back.ts';

/** A note written in place (not dropped by rename) is left this long without changes first. */
const QUIET_MS = 150;
/** Rounds of "new calls appeared while the others ran" handled in one go. */
const MAX_ROUNDS = 4;

/**
 * Look at one note in a watched folder and do what its folder asks: run the calls of an inbox
 * note, apply a human's decisions to a pending note, resume a note left in `In_Progress/`. Never
 * throws for bad note content; an infrastructure failure leaves the note where it is and asks to
 * be tried again later.
 * @param ctx the pipeline context.
 * @param path absolute path of the note.
 * @param kind the folder it is in.
 * @param seen when vaultd last saw it change, by its own monotonic clock.
 * @returns a request to look again later when the note seems unfinished or must wait.
 */
export async function handleNote(
  ctx: PipelineContext,
  path: string,
  kind: FolderKind,
  seen: SeenInfo = { sinceChangeMs: Number.POSITIVE_INFINITY, inPlace: false },
): Promise<JobOutcome> {
  try {
    // A note in In_Progress/ is only ever resumed (which leaves a note being worked on alone),
    // never claimed again from there, whatever folder kind it was queued with: a second claim
    // would take it from under the job working on it.
    if (kind === 'in_progress' || dirname(path) === ctx.layout.inProgress)
      return await resumeNote(ctx, path);
    return await lookAt(ctx, path, kind, seen);
  } catch (error) {
    if (!isInfrastructureError(error)) throw error;
    return defer(ctx, path, error);
  }
}

async function lookAt(
  ctx: PipelineContext,
  path: string,
  kind: Exclude<FolderKind, 'in_progress'>,
  seen: SeenInfo,
): Promise<JobOutcome> {
  // A scan of a pending note seen before with nothing to decide, unchanged since, reads nothing:
  // every reconcile read every pending note whole (notes of 10,000 calls are megabytes each).
  if (kind === 'pending' && seen.byEvent !== true && (await stillQuiet(ctx, path))) return;
  ctx.quietPending?.delete(path);
  // The file stays open until the claim is checked (or we are done with the note): see isSameNote.
  const read = await readNote(path, noteCap(ctx.config.max_note_bytes, kind), true);
  try {
    return await lookAtRead(ctx, path, kind, seen, read);
  } finally {
    releaseNote(read);
  }
}

async function lookAtRead(
  ctx: PipelineContext,
  path: string,
  kind: Exclude<FolderKind, 'in_progress'>,
  seen: SeenInfo,
  read: NoteRead,
): Promise<JobOutcome> {
  if (read.kind === 'gone') return;
  if (read.kind === 'not_a_file' || read.kind === 'linked') {
    warnOnce(ctx, path, read);
    return;
  }
  if (read.kind !== 'text') {
    // Past the cap in a decision folder, the note says so: a tick in it would not be read.
    if (read.mentionsToolCall && (kind === 'inbox' || read.kind === 'too_large'))
      await failUnreadable(ctx, path, read, kind !== 'inbox');
    return;
  }
  if (kind === 'inbox') {
    if (!mightHaveToolCall(read.text)) return;
  } else {
    // A decision folder: only notes with a decision to apply are vaultd's business now (this look
    // takes no share of the budget: notes waiting for a human are looked at at every reconcile).
    const look = await decisionToApply(ctx, read.text, kind, path);
    if (!look.apply) {
      if (kind === 'pending') rememberQuiet(ctx, path, read, look.until);
      return;
    }
  }
  // A note of many calls waits for its share of the call budget before it is parsed.
  const release = await takeBudget(ctx, read.text);
  try {
    return await lookAtBudgeted(ctx, path, kind, seen, read);
  } finally {
    release?.();
  }
}

/**
 * Wait for a note's share of the call budget when it holds more than a few calls.
 * @returns gives the share back; undefined when the note never waits.
 */
async function takeBudget(ctx: PipelineContext, text: string): Promise<(() => void) | undefined> {
  const calls = mentionsOfToolCall(text, ctx.callBudget.capacity);
  return calls > LIGHT_NOTE_CALLS ? ctx.callBudget.acquire(calls) : undefined;
}

async function lookAtBudgeted(
  ctx: PipelineContext,
  path: string,
  kind: Exclude<FolderKind, 'in_progress'>,
  seen: SeenInfo,
  read: Extract<NoteRead, { kind: 'text' }>,
): Promise<JobOutcome> {
  if (kind === 'inbox') {
    const parsed = await parseOrFail(ctx, path, read.text, true);
    if (parsed === null) return;
    if (parsed.calls.length === 0 && parsed.invalid.length === 0) return;
    // A note written in place may still be being written: wait for it to be quiet. One whose
    // calls look unfinished (an unclosed fence, broken JSON) gets the settle time. Both are
    // measured by vaultd's own clock from the last change it saw, never from the file's mtime.
    if (seen.inPlace && seen.sinceChangeMs < QUIET_MS) {
      return { retryAfterMs: QUIET_MS - seen.sinceChangeMs + 5 };
    }
    if (looksUnfinished(parsed) && seen.sinceChangeMs < ctx.config.settle_ms) {
      return { retryAfterMs: ctx.config.settle_ms - seen.sinceChangeMs + 10 };
    }
    return claimAndWork(ctx, path, 'inbox', read);
  }
  return claimAndWork(ctx, path, kind, read);
}

/**
 * Whether a note in a decision folder has something for vaultd to do: it was moved to decide, a
 * box is ticked, or a request it names was decided through the CLI or HTTP, or expired.
 * @returns `apply`, and when there is nothing to apply, `until`: the earliest expiry of the
 *   pending requests it names (ms since the epoch; infinite when none).
 */
async function decisionToApply(
  ctx: PipelineContext,
  text: string,
  kind: 'pending' | 'approved' | 'rejected',
  path: string,
): Promise<{ apply: boolean; until: number }> {
  const no = { apply: false, until: Number.POSITIVE_INFINITY };
  const section = await ctx.notes.approval(text);
  if (kind !== 'pending') {
    // A note moved to decide. One in Approved/ leaves it once worked on, so any section there is
    // applied. One in Rejected/ stays there: it is worked on only while a request recorded for it
    // is open, or any section, vaultd's or not (a heading of the person's own, an agent's with its
    // key spelled `pending\u005fcall`), made vaultd rewrite it at every scan (review finding). A
    // note moved without its section is decided by its recorded requests too (it was left
    // undecided in Approved/).
    const open = hasOpenRequest(ctx, path) ?? section.found;
    return (kind === 'approved' && section.found) || open ? { apply: true, until: 0 } : no;
  }
  if (!section.found) return no;
  const requests = ctx.gate.requests;
  const now = Date.now();
  // A tick on a part that names no request vaultd recorded for this call of this note (a
  // look-alike section an agent wrote, its key spelled `pending\u005fcall` so the write-back never
  // removes it; another note's nonce) is answered once, as a problem is: it made vaultd rewrite
  // the note at every scan, for ever (review finding).
  const foreignTicks: string[] = [];
  for (const decision of section.decisions.values()) {
    const request = decision.nonce === null ? undefined : requests?.get(decision.nonce);
    const ours =
      request !== undefined &&
      request.callId === decision.id &&
      isRequestOf(ctx, request.note, path);
    if (decision.decision !== 'none') {
      if (ours || requests === undefined) return { apply: true, until: 0 };
      foreignTicks.push(`tick ${decision.id} ${decision.nonce ?? ''} ${decision.decision}`);
    }
    if (request === undefined || !ours) continue;
    if (isSettled(request)) return { apply: true, until: 0 };
    if (request.state !== 'pending') continue;
    const expires = Date.parse(request.expiresAt);
    if (expires <= now) return { apply: true, until: 0 };
    if (expires < no.until) no.until = expires;
  }
  if (hasNewProblems(ctx, path, section, foreignTicks)) return { apply: true, until: 0 };
  return no;
}

/**
 * Whether a request recorded for the note at `path` (see {@link isRequestOf}) is still to be
 * decided or run; undefined without a request store.
 */
function hasOpenRequest(ctx: PipelineContext, path: string): boolean | undefined {
  const requests = ctx.gate.requests;
  if (requests === undefined) return undefined;
  return requests.openFor(basename(path)).some((request) => isRequestOf(ctx, request.note, path));
}

/** Most pending notes whose section problems are remembered; past it the memory starts again. */
const MAX_PROBLEM_NOTES = 10_000;

/**
 * Whether the Approval section of a pending note edited in place has problems vaultd has not
 * answered in the note yet (both approve and reject ticked, a changed block…): the note is then
 * worked on, which writes the problems under the calls (QA: both boxes ticked in place got no word
 * at all, only when the note was moved). Each set of problems is answered once per note, so a
 * problem the rewrite cannot clear never makes vaultd rewrite the note again and again.
 * @param path the note's absolute path.
 * @param section its Approval section as read.
 * @param more other things to answer once (ticks on parts that name no request of the note).
 */
function hasNewProblems(
  ctx: PipelineContext,
  path: string,
  section: Awaited<ReturnType<PipelineContext['notes']['approval']>>,
  more: readonly string[] = [],
): boolean {
  const problems: string[] = [...section.problems, ...more];
  for (const decision of section.decisions.values())
    for (const problem of decision.problems) problems.push(`${decision.id}: ${problem}`);
  const answered = (ctx.answeredProblems ??= new Map());
  if (problems.length === 0) {
    answered.delete(path);
    return false;
  }
  const signature = problems.join('\n');
  if (answered.get(path) === signature) return false;
  if (answered.size >= MAX_PROBLEM_NOTES) answered.clear();
  answered.set(path, signature);
  return true;
}

/** Most pending notes remembered as quiet; past it the memory starts again empty. */
const MAX_QUIET_PENDING = 100_000;

/**
 * Remember a pending note seen with nothing to decide, as read (see {@link stillQuiet}).
 * @param until the earliest expiry of its pending requests.
 */
function rememberQuiet(
  ctx: PipelineContext,
  path: string,
  read: Extract<NoteRead, { kind: 'text' }>,
  until: number,
): void {
  const requests = ctx.gate.requests;
  if (requests === undefined) return;
  ctx.quietPending ??= new Map();
  if (ctx.quietPending.size >= MAX_QUIET_PENDING) ctx.quietPending.clear();
  ctx.quietPending.set(path, {
    dev: read.dev,
    ino: read.ino,
    size: read.size,
    mtimeMs: read.mtimeMs,
    requestsVersion: requests.version,
    until,
  });
}

/**
 * Whether a pending note remembered as quiet still is: the same file, unchanged (device, inode,
 * size, modification time, one `lstat`), no approval request made, decided, moved or expired
 * since, and none of its requests due to expire. Only scans ask: a change the watcher reports is
 * always read, so an edit the time stamp cannot show (same size, within its tick) is still seen.
 */
async function stillQuiet(ctx: PipelineContext, path: string): Promise<boolean> {
  const quiet = ctx.quietPending?.get(path);
  const requests = ctx.gate.requests;
  if (quiet === undefined || requests === undefined) return false;
  if (requests.version !== quiet.requestsVersion || Date.now() >= quiet.until) return false;
  const now = await lstat(path).catch(() => undefined);
  return now !== undefined && sameFile(now, quiet);
}

async function claimAndWork(
  ctx: PipelineContext,
  path: string,
  from: Exclude<FolderKind, 'in_progress'>,
  preRead: Extract<NoteRead, { kind: 'text' }>,
): Promise<JobOutcome> {
  // The requests a note from a decision folder names are bound to its claim before the note moves
  // there: bound after, a kill in between left the claim in In_Progress/ with its human's
  // approval bound to the note in Pending_Approval/, and the resumed note had the approved call
  // rejected ("no pending approval"). Bound first, a claim that then fails leaves them bound to a
  // claim that is not there, which counts as the note's own (isRequestOf).
  const claimed = await claimNote(
    path,
    ctx.layout,
    ctx.active,
    from === 'inbox' ? undefined : (dest) => bindRequests(ctx, preRead.text, path, dest, from),
  );
  if (claimed === null) return;
  ctx.bus.emit('note.claimed', { note: noteKey(ctx, claimed), from: noteKey(ctx, path) });
  try {
    return await workClaimed(ctx, claimed, from, preRead, noteKey(ctx, path));
  } finally {
    ctx.active.delete(claimed);
  }
}

/**
 * A note claimed from a decision folder carries the nonces of its pending requests: bind them to
 * the claimed file, so their decisions count for this note, also if a crash cuts the work short.
 */
async function bindRequests(
  ctx: PipelineContext,
  text: string,
  path: string,
  claimed: string,
  from: Exclude<FolderKind, 'in_progress'>,
): Promise<void> {
  const requests = ctx.gate.requests;
  if (requests === undefined) return;
  // The move that decides is recorded with the claim: resumed, the note is decided by it still.
  const via = moveFolderOf(from) ?? undefined;
  const section = await ctx.notes.approval(text);
  if (!section.found) {
    // Moved to decide with the section deleted: the open requests recorded for the note.
    for (const request of requests.openFor(basename(path))) {
      if (isRequestOf(ctx, request.note, path))
        await requests.moved(request.id, noteKey(ctx, claimed), { from: via });
    }
    return;
  }
  for (const decision of section.decisions.values()) {
    const request = decision.nonce === null ? undefined : requests.get(decision.nonce);
    if (request === undefined || request.callId !== decision.id) continue;
    if (!isRequestOf(ctx, request.note, path)) continue;
    if (request.state !== 'consumed' && request.state !== 'superseded')
      await requests.moved(request.id, noteKey(ctx, claimed), { from: via });
  }
}

/** The folder `from` when a note moved there is decided by the move, else null. */
function moveFolderOf(from: FolderKind): MoveFolder | null {
  return from === 'approved' || from === 'rejected' ? from : null;
}

/**
 * The folder whose move decides that a resumed claim was taken from, as recorded with the claim
 * in its requests (null when it came from `Pending_Approval/`, or from the inbox).
 */
function claimedFrom(ctx: PipelineContext, key: string, name: string): MoveFolder | null {
  for (const request of ctx.gate.requests?.openFor(name) ?? []) {
    if (request.note === key && request.claimedFrom !== undefined) return request.claimedFrom;
  }
  return null;
}

/**
 * Whether a request recorded for the note at `recorded` is one of the note now at `path`: the
 * same path, the same name in another decision folder (a human moved the note to decide), or
 * this note's claim in `In_Progress/` (a stop between the claim and the move back). The text of a
 * note names its requests, and an agent can write another note's request there: bound to this
 * note, that request would be decided as this note's (red-team replay in
 * test/e2e/decisions.test.ts).
 * @param recorded the request's vault-relative note path.
 * @param path absolute path of the note now, in a decision folder.
 */
function isRequestOf(ctx: PipelineContext, recorded: string, path: string): boolean {
  const at = join(ctx.layout.root, recorded);
  if (at === path) return true;
  const folder = dirname(at);
  const name = basename(path);
  if (folder === ctx.layout.inProgress) {
    // Not while that claim is being worked on: a copy of the note moved into a decision folder
    // beside it took its approved request too, and the call ran twice.
    return !ctx.active.has(at) && readClaimedName(basename(at)).original === name;
  }
  const decisionFolders = [ctx.layout.pending, ctx.layout.approved, ctx.layout.rejected];
  return decisionFolders.includes(folder) && basename(at) === name;
}

/**
 * Finish a note left in `In_Progress/` by a crash, a hard stop or an infrastructure failure:
 * calls with a recorded outcome are written back, calls cut off are reported as interrupted,
 * calls that never started run. A note another live vaultd is working on is left alone.
 * @param ctx the pipeline context.
 * @param path absolute path of the note in `In_Progress/`.
 */
export async function resumeNote(ctx: PipelineContext, path: string): Promise<JobOutcome> {
  if (ctx.active.has(path) || isClaimedByOther(basename(path))) return;
  const read = await readNote(path, noteCap(ctx.config.max_note_bytes, 'in_progress'));
  if (read.kind === 'gone') return;
  if (read.kind === 'linked') {
    // A kill between the two steps of the final move leaves the note under two names.
    const moved = await recoverInterruptedMove(path, ctx.layout);
    if (moved !== null && [ctx.layout.inbox, ctx.layout.approved].includes(dirname(moved))) {
      ctx.logger.info(
        { note: noteKey(ctx, path), to: noteKey(ctx, moved) },
        'undid a claim cut short: the note is taken again from where it was',
      );
      return;
    }
    if (moved !== null) {
      ctx.logger.info(
        { note: noteKey(ctx, path), to: noteKey(ctx, moved) },
        'finished an interrupted move',
      );
      await markNoteWritten(ctx, moved);
      return;
    }
    warnOnce(ctx, path, read);
    return;
  }
  if (read.kind !== 'text') {
    const moved = await moveNoOverwrite(
      path,
      ctx.layout.failed,
      readClaimedName(basename(path)).original,
      { vault: ctx.layout.root },
    );
    ctx.logger.error(
      { note: noteKey(ctx, path), reason: read.kind, moved_to: moved && noteKey(ctx, moved) },
      'unreadable note in In_Progress moved to Failed',
    );
    return;
  }
  ctx.logger.info({ note: noteKey(ctx, path) }, 'resuming note left in progress');
  ctx.active.add(path);
  const release = await takeBudget(ctx, read.text);
  try {
    return await workClaimed(ctx, path, 'in_progress', read, noteKey(ctx, path));
  } finally {
    release?.();
    ctx.active.delete(path);
  }
}

async function workClaimed(
  ctx: PipelineContext,
  path: string,
  from: FolderKind,
  preRead: Extract<NoteRead, { kind: 'text' }>,
  origin: string,
): Promise<JobOutcome> {
  try {
    if (from === 'in_progress') await rebindBoundAhead(ctx, noteKey(ctx, path));
    // What runs is what is in In_Progress/ now: the claim moved the file we read, but another
    // file may have been put in its place between our read and the claim. The file we read is
    // still open, so the same inode there, unchanged, is the same file; anything else is read.
    let read = preRead;
    const readAgain = from !== 'in_progress' && !(await isSameNote(preRead, path));
    releaseNote(preRead);
    if (readAgain) {
      const now = await readNote(path, noteCap(ctx.config.max_note_bytes, from));
      if (now.kind !== 'text') {
        ctx.logger.warn(
          { note: noteKey(ctx, path), reason: now.kind },
          'claimed note is not a readable note',
        );
        if (now.kind !== 'gone')
          await failClaimed(
            ctx,
            path,
            new Error(`the note is ${now.kind}`),
            'NOTE_NOT_TEXT',
            false,
          );
        return;
      }
      read = now;
    }
    const parsed = await parseOrFail(ctx, path, read.text, false);
    if (parsed === null) return;
    // Also for a note resumed from In_Progress/: an agent can write one there. A note vaultd
    // claimed was under the cap then, and its waiting blocks only get fewer; one over a cap
    // lowered since fails, and the calls that ran are replayed from the ledger when it comes back.
    const waiting = waitingBlocks(parsed);
    if (waiting > ctx.config.max_calls_per_note) {
      await failClaimed(
        ctx,
        path,
        new Error(tooManyCallsMessage(waiting, ctx.config.max_calls_per_note)),
        'NOTE_TOO_LARGE',
      );
      return;
    }
    const name = readClaimedName(basename(path)).original;
    const key = noteKey(ctx, path);
    const movedTo = from === 'in_progress' ? claimedFrom(ctx, key, name) : moveFolderOf(from);
    await work(ctx, { path, key, name, from, movedTo, origin, text: read.text, parsed }, read);
    ctx.deferrals.delete(path);
    return;
  } catch (error) {
    if (isInfrastructureError(error)) return defer(ctx, path, error);
    await failClaimed(ctx, path, error, 'EXECUTION_FAILED').catch((failure: unknown) => {
      ctx.logger.error({ err: failure, note: noteKey(ctx, path) }, 'could not fail the note');
    });
    return;
  }
}

/**
 * Take back the requests of a note resumed in `In_Progress/` that were bound to the name it was
 * about to get in `Pending_Approval/`, when it never got there: a kill between the binding and
 * the move left them pending under that name, the resumed note asked the human again with new
 * ones, and the old ones stayed listed (the Dashboard, `vaultd approvals`) until they expired,
 * two requests for one call. Bound back to the claim, they are the ones the note's section
 * names, so the note waits on them again. A request whose named note exists stays where it is:
 * that note is the one it was bound to.
 * @param ctx the pipeline context.
 * @param key the resumed note's vault-relative path.
 */
async function rebindBoundAhead(ctx: PipelineContext, key: string): Promise<void> {
  const requests = ctx.gate.requests;
  if (requests === undefined) return;
  for (const request of requests.boundAhead(key)) {
    if (await exists(join(ctx.layout.root, request.note))) continue;
    await requests.moved(request.id, key);
    ctx.logger.info(
      { note: key, call: request.callId, request: request.id },
      'approval request bound back to its note: vaultd stopped before the note moved to wait',
    );
  }
}

/** Leave the note where it is and look again later, backing off; say what is wrong. */
function defer(ctx: PipelineContext, path: string, error: unknown): JobOutcome {
  const inProgress = dirname(path) === ctx.layout.inProgress;
  const attempts = (ctx.deferrals.get(path) ?? 0) + 1;
  ctx.deferrals.set(path, attempts);
  const code = (error as { code?: string }).code ?? 'EIO';
  const message = ctx.redact(error instanceof Error ? error.message : String(error));
  ctx.conditions.report(code, message);
  const retryAfterMs = Math.min(60_000, 500 * 2 ** Math.min(attempts - 1, 7));
  ctx.logger.error(
    { note: noteKey(ctx, path), code, attempt: attempts, retry_in_ms: retryAfterMs, err: error },
    'file system problem: the note stays where it is and is tried again later',
  );
  // `vaultd once` does not wait for the disk: the note stays where it is for the next run.
  if (!ctx.retryDeferred) return;
  return { retryAfterMs, path, kind: inProgress ? 'in_progress' : undefined };
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
    const claimed = claimFirst ? await claimNote(path, ctx.layout, ctx.active) : path;
    if (claimed === null) return null;
    try {
      await failClaimed(ctx, claimed, error, 'NOTE_TOO_COMPLEX', false);
    } finally {
      if (claimFirst) ctx.active.delete(claimed);
    }
    return null;
  }
}

/**
 * The `tool_call` blocks of a note that have no result yet (calls and blocks that could not be
 * read as calls): what processing the note would run or answer.
 * @param parsed the parsed note.
 */
export function waitingBlocks(parsed: ParsedNote): number {
  let count = 0;
  for (const c of parsed.calls) if (!parsed.results.has(c.id)) count++;
  for (const b of parsed.invalid) if (!parsed.results.has(b.id)) count++;
  return count;
}

/**
 * The error for a note over `max_calls_per_note`.
 * @param count the blocks waiting for a result.
 * @param cap the configured cap.
 */
export function tooManyCallsMessage(count: number, cap: number): string {
  return `the note holds ${count} tool_call blocks without a result, over the cap of ${cap} (config max_calls_per_note); nothing was run. Split the calls over several notes`;
}

/**
 * True when a block that mentions `tool_call` is broken in a way a writer still at work leaves (an
 * unclosed fence, JSON cut short). Calls that are complete but have bad parameters do not wait.
 */
function looksUnfinished(parsed: ParsedNote): boolean {
  return parsed.invalid.some((block) => !parsed.results.has(block.id));
}

async function work(
  ctx: PipelineContext,
  first: NoteWork,
  stamp: { mtimeMs: number; size: number },
): Promise<void> {
  let note = first;
  let noteStamp = stamp;
  const all: ToolResult[] = [];
  const logged: Logged[] = [];
  const keys = new Set<string>();
  const settledIds = new Set<string>();
  for (let round = 1; ; round++) {
    const results: Ordered[] = [];
    const frontProblem = note.parsed.diagnostics.find((d) => d.code === 'UNSUPPORTED_FRONT_MATTER');
    let pending: Awaited<ReturnType<typeof settleCalls>>['pending'] = [];
    let ranArguments = new Map<string, Record<string, unknown>>();
    let sideEffects = false;
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
      const outcome = await settleCalls(ctx, note);
      // Not `push(...)`: spread arguments overflow the stack past about 120,000 (a 5 MB note of
      // short calls holds more).
      for (const r of outcome.results) results.push(r);
      pending = outcome.pending;
      ranArguments = outcome.ranArguments;
      sideEffects = outcome.sideEffects;
      for (const key of outcome.ledgerKeys) keys.add(key);
      if (outcome.deferred !== undefined) {
        // Calls that finished are in the ledger; the note waits and resumes from In_Progress/.
        throw outcome.deferred;
      }
    }
    results.sort((a, b) => a.order - b.order);
    // A note may hold tens of thousands of calls: every loop over them lets the event loop run.
    const fresh: ToolResult[] = [];
    for (const [i, r] of results.entries()) {
      await yieldAtItem(i);
      fresh.push(r.result);
      settledIds.add(r.result.id);
    }
    for (const p of pending) settledIds.add(p.id);

    if (ctx.shutdown.aborted) {
      // Past the grace period: finished calls keep their results (also in the ledger), the ones
      // cut off get none, and the note stays claimed for the next start.
      const finished = fresh.filter((r) => r.status !== 'interrupted');
      await writeBack(
        ctx,
        note.path,
        note.text,
        noteStamp,
        note.parsed,
        finished,
        pending,
        true,
        true,
      );
      ctx.logger.warn({ note: note.key }, 'shutdown: note left in In_Progress for the next start');
      return;
    }

    const argumentsById = new Map<string, Record<string, unknown>>();
    for (const [i, c] of note.parsed.calls.entries()) {
      await yieldAtItem(i);
      argumentsById.set(c.id, c.arguments);
    }
    for (const [i, result] of fresh.entries()) {
      await yieldAtItem(i);
      // The log names the arguments that ran: a human may have edited the agent's.
      logged.push({ result, args: ranArguments.get(result.id) ?? argumentsById.get(result.id) });
      all.push(result);
    }

    const written = await writeBack(
      ctx,
      note.path,
      note.text,
      noteStamp,
      note.parsed,
      fresh,
      pending,
      sideEffects || keys.size > 0,
    );
    if (written === null) return;
    // Someone added calls while the others ran: run them too before the note moves on.
    if (written.changedExternally && round < MAX_ROUNDS && mightHaveToolCall(written.text)) {
      const parsed = await ctx.notes.parse(written.text);
      const added = parsed.calls.some((c) => !parsed.results.has(c.id) && !settledIds.has(c.id));
      if (added) {
        note = { ...note, text: written.text, parsed };
        noteStamp = written.stamp ?? noteStamp;
        continue;
      }
    }
    await finish(ctx, note, note.parsed, all, pending, [...keys], logged);
    return;
  }
}

/**
 * Close the requests still open for the claim that the note no longer waits on: the note now
 * waits only on the calls in `pending`. A request left open for a call the note answered (a
 * refused decision) kept a note in `Rejected/` worked on at every scan, for ever, each claim
 * recorded in the requests file. Only notes from a decision folder or resumed can have such
 * requests: a note from the inbox has none but the ones this claim made.
 */
async function closeLeftRequests(
  ctx: PipelineContext,
  note: NoteWork,
  pending: Awaited<ReturnType<typeof settleCalls>>['pending'],
): Promise<void> {
  const requests = ctx.gate.requests;
  if (requests === undefined) return;
  const waiting = new Set(pending.map((p) => p.nonce));
  for (const request of requests.openFor(note.name)) {
    if (request.note !== note.key || waiting.has(request.id)) continue;
    if (await requests.setState(request.id, 'superseded', ['pending', 'approved'])) {
      ctx.logger.info(
        { note: note.key, call: request.callId, request: request.id },
        'approval request closed: the note no longer waits on its call',
      );
    }
  }
}

async function finish(
  ctx: PipelineContext,
  note: NoteWork,
  parsed: ParsedNote,
  results: readonly ToolResult[],
  pending: Awaited<ReturnType<typeof settleCalls>>['pending'],
  keys: string[],
  logged: readonly Logged[],
): Promise<void> {
  const target = await chooseTarget(parsed, results, pending);
  const dir = {
    done: ctx.layout.done,
    failed: ctx.layout.failed,
    pending: ctx.layout.pending,
    rejected: ctx.layout.rejected,
  }[target];
  // The results are in the note: the ledger is told before the move, where the note is going (a
  // kill between the move and this left the entries unwritten for good, and a later note of the
  // same name had its calls replayed for ever instead of run). Told again if the name differs.
  const planned = noteKey(ctx, join(dir, note.name));
  if (keys.length > 0) await ctx.ledger.markWritten(keys, planned);
  // Before the move: closed after it, a scan in between took the note in Rejected/ for one with
  // an open request and claimed it once more.
  if (note.from !== 'inbox') await closeLeftRequests(ctx, note, pending);
  const requests = ctx.gate.requests;
  // The requests of a note that goes to wait are bound to the name it gets before it moves
  // there: bound after, a kill between left them bound to the claim, which counts only for a
  // note of the claim's own name, and a note filed as `x-1.md` beside another `x.md` could never
  // be approved (crash audit). A kill before the move leaves them bound to a name the note does
  // not have yet, which the resumed note takes back (rebindBoundAhead).
  const bindPending =
    target === 'pending' && requests !== undefined
      ? async (dest: string): Promise<void> => {
          const key = noteKey(ctx, dest);
          for (const p of pending) {
            if (p.nonce !== undefined) await requests.moved(p.nonce, key, { movedFrom: note.key });
          }
        }
      : undefined;
  const moved = await moveClaimed(note.path, dir, note.name, ctx.layout.root, bindPending);
  if (moved === null) {
    ctx.logger.error({ note: note.key }, 'note vanished from In_Progress before it could be moved');
    await report(ctx, note.key, logged);
    return;
  }
  const to = noteKey(ctx, moved);
  if (keys.length > 0 && to !== planned) await ctx.ledger.markWritten(keys, to);
  await report(ctx, to, logged);
  for (const p of pending) if (p.nonce !== undefined) await requests?.moved(p.nonce, to);
  // A request decided (CLI, HTTP) or expired while the note was claimed had its note queued where
  // it was not yet, or looked at before the request was bound to it there: the decision waited
  // for the next scan, although the API had said the note was queued (review finding F1). Look
  // at it again now that the request names the note where it is.
  if (requests !== undefined && pending.some((p) => isSettled(requests.get(p.nonce ?? ''))))
    ctx.requeue?.(moved, 'pending');
  ctx.bus.emit('note.moved', { note: to, from: note.key, to, state: target });
  if (target === 'pending') {
    ctx.bus.emit('approval.requested', {
      note: to,
      callIds: pending.map((p) => p.id),
      tools: pending.map((p) => p.name),
    });
  }
  ctx.conditions.clear();
  ctx.logger.info(
    { note: to, state: target, results: results.length, pending: pending.length },
    'note processed',
  );
}

/** Whether a request was decided or expired: its note has something to apply. */
function isSettled(request: ApprovalRequest | undefined): boolean {
  return (
    request?.state === 'approved' || request?.state === 'rejected' || request?.state === 'expired'
  );
}

/** A result to log once the note's final path is known. */
interface Logged {
  readonly result: ToolResult;
  readonly args: Record<string, unknown> | undefined;
}

/** Log results and tell the event stream, naming the note by the path it has now. */
async function report(
  ctx: PipelineContext,
  note: string,
  logged: readonly Logged[],
): Promise<void> {
  for (const { result, args } of logged) {
    await yieldWhenSpent();
    logResult(ctx, note, result, args);
    ctx.bus.emit('tool.result', { note, callId: result.id, tool: result.name, result });
  }
}

const warned = new WeakMap<PipelineContext, Set<string>>();

function warnOnce(ctx: PipelineContext, path: string, read: NoteRead): void {
  let seen = warned.get(ctx);
  if (seen === undefined) {
    seen = new Set();
    warned.set(ctx, seen);
  }
  const id = `${path}\0${read.kind}\0${'ino' in read ? read.ino : ''}`;
  if (seen.has(id)) return;
  seen.add(id);
  if (seen.size > 10_000) seen.clear();
  ctx.logger.warn(
    { note: noteKey(ctx, path), reason: read.kind },
    read.kind === 'linked'
      ? 'a note with several hard links is refused (writing it could change another file): left alone'
      : 'not a regular file (symlink, fifo?): left alone',
  );
}
