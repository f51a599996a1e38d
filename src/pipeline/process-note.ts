import { appendFile, stat } from 'node:fs/promises';
import { basename, dirname, relative } from 'node:path';
import {
  decideCall,
  EXPIRED_REASON,
  isExpired,
  readAllowedTools,
  readApprovalSection,
  rejectionMessage,
  renderApprovalSection,
  resolveDecisions,
  APPROVAL_HEADING as APPROVAL_SECTION,
  type PendingCall,
  type Resolution,
} from '../approval/index.ts';
import { ApprovalRequests } from '../approval/requests.ts';
import {
  mightHaveToolCall,
  NoteTooComplexError,
  renderResult,
  type WriteBackEdit,
} from '../note/index.ts';
import type { FoundCall, InvalidBlock, ParsedNote } from '../note/types.ts';
import type { ErrorCode } from '../protocol/errors.ts';
import type { ApprovedBy, Tool, ToolCall, ToolResult } from '../protocol/types.ts';
import {
  claimNote,
  fsyncDirectory,
  moveNoOverwrite,
  writeFileAtomic,
  type LedgerCall,
} from '../vault/index.ts';
import type { FolderKind } from '../vault/watcher.ts';
import type { PipelineContext } from './context.ts';
import { makePipelineResult } from './make-result.ts';
import type { JobOutcome } from './note-queue.ts';
import { readNote } from './read-note.ts';
import { hashArguments } from './hash-arguments.ts';

/** The heading of the section where pending calls wait for a human. */
export const APPROVAL_HEADING = `## ${APPROVAL_SECTION}`;

/** How a claimed note came to be worked on. */
interface WorkOptions {
  /** Found in `In_Progress/` at start-up: calls with an intent but no result were interrupted. */
  readonly resume: boolean;
  /** What a pending call without a ticked box gets: moving the note to Approved/ or Rejected/. */
  readonly defaultDecision: 'approve' | 'reject' | 'none';
  /** The folder the note was claimed from, whose entry must be gone for good before an intent. */
  readonly claimedFrom: readonly string[];
  /** Modification time and size of the text that was parsed, to tell whether it changed since. */
  readonly stamp: NoteStamp;
}

/** What tells one version of a note's file from another without reading it. */
interface NoteStamp {
  readonly mtimeMs: number;
  readonly size: number;
}

/** A result and the offset of its block, for writing results in block order. */
interface Ordered {
  readonly result: ToolResult;
  readonly order: number;
}

/** A call that passed the checks, with who let it run. */
interface Runnable {
  readonly call: ToolCall;
  readonly approvedBy: ApprovedBy;
  readonly originalArguments: Record<string, unknown> | undefined;
  readonly order: number;
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

/**
 * The last resort for a claimed note whose processing failed (a note too complex to parse, a
 * bug, a disk error): move it to `Failed/` with the reason appended, so it is neither lost nor
 * stuck in `In_Progress/`. Appending, not rewriting: the note's text must survive as it is.
 */
async function failClaimed(
  ctx: PipelineContext,
  path: string,
  error: unknown,
  code: ErrorCode,
): Promise<void> {
  const key = noteKey(ctx, path);
  const reason = error instanceof Error ? error.message : String(error);
  ctx.logger.error({ err: error, note: key, code }, 'note failed as a whole; moving it to Failed');
  if (ctx.shutdown.aborted) return;
  const message =
    code === 'EXECUTION_FAILED'
      ? `vaultd could not process this note: ${reason}. Its calls without a result did not run; fix the note and move it back to the inbox, or report the problem.`
      : reason;
  const result = makePipelineResult({
    id: 'note_error',
    name: 'vaultd',
    status: 'error',
    code,
    message,
  });
  logPseudo(ctx, key, code, message);
  try {
    await appendFile(path, `\n\n## Tool Results\n\n${renderResult(result)}\n`);
  } catch (appendError) {
    ctx.logger.error({ err: appendError, note: key }, 'could not append the error to the note');
  }
  try {
    await moveNoOverwrite(path, ctx.layout.failed, basename(path));
    await ctx.ledger.release(key);
  } catch (moveError) {
    ctx.logger.error(
      { err: moveError, note: key },
      'could not move the note to Failed; it stays in In_Progress',
    );
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

/**
 * Decide every call of the note that has no result yet, apply a human's decisions from the
 * Approval section (or from the folder the note was moved to), and run what may run.
 */
async function settleCalls(
  ctx: PipelineContext,
  key: string,
  text: string,
  parsed: ParsedNote,
  front: Readonly<Record<string, unknown>>,
  options: WorkOptions,
): Promise<{
  results: Ordered[];
  pending: PendingCall[];
  ranArguments: Map<string, Record<string, unknown>>;
  sideEffects: boolean;
}> {
  const results: Ordered[] = [];
  const runnable: Runnable[] = [];
  const asking: { call: PendingCall; order: number; tool: Tool }[] = [];
  const openIntents = options.resume ? ctx.ledger.openIntents(key) : new Map<string, unknown>();
  // Calls that finished before a crash cut the write-back short: their recorded results.
  const recorded = options.resume ? ctx.ledger.calls(key) : new Map<string, LedgerCall>();
  const allowed = readAllowedTools(front['allowed_tools']);
  const section = readApprovalSection(text);
  const requests = requestsOf(ctx);
  const error = (order: number, input: Parameters<typeof makePipelineResult>[0]): void => {
    results.push({ order, result: makePipelineResult(input) });
  };
  // Policy and the note's allowed_tools for a call; a denial is written as its result at once.
  const decide = (call: ToolCall, tool: Tool, order: number): ReturnType<typeof decideCall> => {
    const verdict = decideCall({
      call,
      tool,
      policy: ctx.policy,
      grants: ctx.grants,
      allowedTools: allowed.allowed,
    });
    if (verdict.action === 'deny') {
      error(order, {
        id: call.id,
        name: call.name,
        status: 'error',
        code: 'PERMISSION_DENIED',
        message: verdict.message,
        safety: tool.safety,
      });
    }
    return verdict;
  };

  for (const block of parsed.invalid) {
    if (!parsed.results.has(block.id))
      results.push({ order: block.start.offset, result: invalidBlockResult(block) });
  }

  for (const call of parsed.calls) {
    if (parsed.results.has(call.id)) continue;
    const order = call.start.offset;
    const tool = ctx.registry.get(call.name);
    const finished = recorded.get(call.id)?.result;
    if (isToolResult(finished, call.id)) {
      results.push({ order, result: finished });
      continue;
    }
    if (openIntents.has(call.id) && tool !== undefined && !tool.readOnly) {
      error(order, {
        id: call.id,
        name: call.name,
        status: 'interrupted',
        code: 'INTERRUPTED',
        message:
          'vaultd stopped while this call ran, so it may or may not have taken effect; it was not re-run. Check its effect, then write a new call (with a new id) if it should run again.',
        safety: tool.safety,
      });
      continue;
    }
    const toCheck: ToolCall = { id: call.id, name: call.name, arguments: call.arguments };
    const checked = ctx.executor.check(toCheck);
    if (!checked.ok) {
      // Unknown tool or bad parameters: no human is asked about a call that cannot run.
      results.push({ order, result: await ctx.executor.execute(toCheck, { note: key }) });
      continue;
    }
    const verdict = decide(toCheck, checked.tool, order);
    if (verdict.action === 'deny') continue;
    if (verdict.action === 'run') {
      runnable.push({
        call: toCheck,
        approvedBy: verdict.approvedBy,
        originalArguments: undefined,
        order,
      });
    } else {
      const requestedAt =
        requests.find({ id: call.id, name: call.name, arguments: call.arguments })?.requested_at ??
        new Date().toISOString();
      asking.push({
        order,
        tool: checked.tool,
        call: {
          id: call.id,
          name: call.name,
          arguments: call.arguments,
          requestedAt,
          reason: verdict.reason,
        },
      });
    }
  }

  const move = options.defaultDecision === 'none' ? undefined : options.defaultDecision;
  const resolutions = resolveDecisions(
    asking.map((a) => a.call),
    section,
    move,
  );
  const pending: PendingCall[] = [];
  for (const [i, found] of resolutions.entries()) {
    const { call, order, tool } = asking[i] as (typeof asking)[number];
    const resolution = checkAskedBefore(requests, call, section, found);
    if (resolution.kind === 'reject') {
      error(order, {
        id: call.id,
        name: call.name,
        status: 'rejected',
        code: 'REJECTED',
        message: resolution.message,
        safety: tool.safety,
      });
      continue;
    }
    if (resolution.kind === 'wait') {
      if (isExpired(call.requestedAt, ctx.config.approval.expire_after_ms)) {
        error(order, {
          id: call.id,
          name: call.name,
          status: 'rejected',
          code: 'REJECTED',
          message: rejectionMessage(EXPIRED_REASON),
          safety: tool.safety,
        });
        continue;
      }
      // Parameters a human edited in a call vaultd asked about stay edited while it waits (another
      // call of the note may have been decided); a section vaultd never wrote shows the agent's.
      const edited = section.decisions.get(call.id)?.arguments;
      const shown = edited != null && requests.find(call) !== undefined ? edited : call.arguments;
      requests.record(call, new Date(call.requestedAt));
      const preview = await makePreview(ctx, tool, shown);
      // A first request has no section yet: its "no Approval section" problem is no news.
      const problems = section.found ? resolution.problems : [];
      pending.push({
        ...call,
        arguments: shown,
        ...(preview === undefined ? {} : { preview }),
        ...(problems.length > 0 ? { reason: problems.join('; ') } : {}),
      });
      continue;
    }
    // Approved: the arguments as the human left them are checked again, and a deny rule still wins.
    const approved: ToolCall = {
      id: call.id,
      name: call.name,
      arguments: { ...resolution.arguments },
    };
    if (decide(approved, tool, order).action === 'deny') continue;
    if (resolution.grant) await ctx.grants.add(call.name, { by: 'human', note: key });
    runnable.push({
      call: approved,
      approvedBy: resolution.approvedBy,
      originalArguments:
        resolution.originalArguments === undefined
          ? undefined
          : { ...resolution.originalArguments },
      order,
    });
  }

  // The ledger names the note by its In_Progress/ path: before the first intent, the claim's
  // rename must be on disk too, or a power cut could bring the note back to the inbox and run the
  // call again. Only notes with side effects pay for these fsyncs.
  let synced: Promise<void> | undefined;
  const durable = (): Promise<void> =>
    (synced ??= Promise.all([
      fsyncDirectory(ctx.layout.inProgress),
      ...options.claimedFrom.map((d) => fsyncDirectory(d)),
    ]).then(() => undefined));
  const ran = await Promise.all(runnable.map((r) => runOne(ctx, key, r, durable)));
  results.push(...ran);
  const ranArguments = new Map(runnable.map((r) => [r.call.id, r.call.arguments]));
  const sideEffects = runnable.some((r) => ctx.registry.get(r.call.name)?.readOnly !== true);
  return { results, pending, ranArguments, sideEffects };
}

/**
 * An approval counts only for a call vaultd itself put before a human, as it recorded it (same
 * id, tool, arguments and request time): an Approval section an agent wrote into its own note, or
 * one whose request time was edited, is never taken for a human's decision.
 */
function checkAskedBefore(
  requests: ApprovalRequests,
  call: PendingCall,
  section: ReturnType<typeof readApprovalSection>,
  resolution: Resolution,
): Resolution {
  if (resolution.kind !== 'approve') return resolution;
  const recorded = requests.find(call);
  const shown = section.decisions.get(call.id)?.requestedAt;
  if (recorded !== undefined && shown === recorded.requested_at) return resolution;
  const problems =
    recorded === undefined
      ? []
      : [
          `requested_at in the pending_call block was changed; change it back to "${recorded.requested_at}", then tick again`,
        ];
  return { kind: 'wait', id: call.id, name: call.name, problems };
}

const requestStores = new Map<string, ApprovalRequests>();

/** The approval requests of the context's vault, opened once per state directory. */
function requestsOf(ctx: PipelineContext): ApprovalRequests {
  let store = requestStores.get(ctx.layout.state);
  if (store === undefined) {
    store = ApprovalRequests.open(ctx.layout.state);
    requestStores.set(ctx.layout.state, store);
  }
  return store;
}

async function runOne(
  ctx: PipelineContext,
  key: string,
  r: Runnable,
  durable: () => Promise<void>,
): Promise<Ordered> {
  const { call } = r;
  ctx.bus.emit('tool.call', {
    note: key,
    callId: call.id,
    tool: call.name,
    arguments: call.arguments,
  });
  const result = await ctx.executor.execute(call, {
    approvedBy: r.approvedBy,
    note: key,
    signal: ctx.shutdown,
    ...(r.originalArguments === undefined ? {} : { originalArguments: r.originalArguments }),
    onIntent: async (c, tool) => {
      await durable();
      await ctx.ledger.recordIntent({
        note: key,
        callId: c.id,
        tool: tool.name,
        argsHash: hashArguments(c.arguments),
      });
    },
    onProgress: (progress) =>
      ctx.bus.emit('tool.progress', { note: key, callId: call.id, tool: call.name, progress }),
  });
  if (ctx.registry.get(call.name)?.readOnly !== true && result.status !== 'interrupted') {
    // Kept until the note is written back: a crash in between then yields this result, not an
    // `interrupted` one for a call that in fact finished.
    await ctx.ledger.recordDone(key, call.id, result.status, result);
  }
  return { order: r.order, result };
}

async function makePreview(
  ctx: PipelineContext,
  tool: Tool,
  args: Record<string, unknown>,
): Promise<string | undefined> {
  if (tool.preview === undefined) return undefined;
  try {
    return await tool.preview(args, {
      config: ctx.config.tools[tool.name] ?? {},
      vault: ctx.layout.root,
    });
  } catch (error) {
    ctx.logger.warn({ err: error, tool: tool.name }, 'preview failed');
    return undefined;
  }
}

function invalidBlockResult(block: InvalidBlock): ToolResult {
  const where = `line ${block.start.line}, column ${block.start.column}`;
  return makePipelineResult({
    id: block.id,
    name: block.name ?? 'unknown',
    status: 'error',
    code: block.code,
    message: block.unclosed
      ? `the fenced block at ${where} is not closed; close it with a fence line of at least as many backticks, then move the note back to the inbox`
      : `${block.message} (block at ${where})`,
  });
}

async function writeBack(
  ctx: PipelineContext,
  path: string,
  originalText: string,
  stamp: NoteStamp,
  parsed: ParsedNote,
  results: readonly ToolResult[],
  pending: readonly PendingCall[],
  sideEffects: boolean,
  unfinished = false,
): Promise<string | null> {
  // Results go into the note as it is on disk now: a human may have edited it while calls ran.
  // Unchanged modification time and size mean the text we parsed, without reading it again.
  const now = await stat(path);
  let current = originalText;
  if (now.mtimeMs !== stamp.mtimeMs || now.size !== stamp.size) {
    const read = await readNote(path, Number.MAX_SAFE_INTEGER);
    if (read.kind !== 'text') {
      ctx.logger.error(
        { note: noteKey(ctx, path), reason: read.kind },
        'note changed into something unreadable while its calls ran',
      );
      return null;
    }
    current = read.text;
    stamp = read;
  }
  const counts = countResults(parsed, results);
  const edit: WriteBackEdit = {
    results,
    section: {
      heading: APPROVAL_HEADING,
      body: pending.length > 0 ? renderApprovalSection([...pending]) : null,
    },
    frontMatter: {
      status: unfinished
        ? 'in_progress'
        : pending.length > 0
          ? 'pending_approval'
          : counts.rejected > 0
            ? 'rejected'
            : counts.errors > 0
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
  const text = await ctx.notes.edit(current, edit);
  if (text === current) return text;
  const before = await stat(path);
  if (before.mtimeMs !== stamp.mtimeMs || before.size !== stamp.size) {
    // Edited again between our read and now: start over on the newer text.
    return writeBack(
      ctx,
      path,
      originalText,
      stamp,
      parsed,
      results,
      pending,
      sideEffects,
      unfinished,
    );
  }
  // The folder's fsync makes the rename durable; without side effects a power cut that loses it
  // only means the note's read-only calls run again, so it is skipped.
  await writeFileAtomic(path, text, { fsyncDir: sideEffects, mode: before.mode & 0o7777 });
  return text;
}

function countResults(
  parsed: ParsedNote,
  results: readonly ToolResult[],
): { errors: number; rejected: number } {
  let errors = 0;
  let rejected = 0;
  const statuses = new Map<string, string>();
  for (const [id, found] of parsed.results) statuses.set(id, found.status);
  for (const result of results) statuses.set(result.id, result.status);
  for (const status of statuses.values()) {
    if (status === 'rejected') rejected++;
    else if (status !== 'success') errors++;
  }
  return { errors, rejected };
}

function chooseTarget(
  parsed: ParsedNote,
  results: readonly ToolResult[],
  pending: readonly PendingCall[],
): 'done' | 'failed' | 'pending' | 'rejected' {
  if (pending.length > 0) return 'pending';
  const counts = countResults(parsed, results);
  if (counts.rejected > 0 && counts.errors === 0) return 'rejected';
  if (counts.errors > 0 || counts.rejected > 0) return 'failed';
  return 'done';
}

function logResult(
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
  });
  if (result.success) return;
  ctx.logger.warn(
    { note, call: result.id, tool: result.name, code: result.error?.code },
    result.error?.message ?? 'call failed',
  );
}

async function failUnreadable(
  ctx: PipelineContext,
  path: string,
  read: { kind: 'too_large' | 'binary' | 'not_utf8'; size?: number },
): Promise<void> {
  const key = noteKey(ctx, path);
  if (read.kind !== 'too_large') {
    // Writing results into a binary file would corrupt it: move it aside untouched and say why.
    const moved = await moveNoOverwrite(path, ctx.layout.failed, basename(path));
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
  const claimed = await claimNote(path, ctx.layout);
  if (claimed === null) return;
  const message = `the note is ${read.size ?? 0} bytes, over the ${ctx.config.max_note_bytes}-byte cap (config max_note_bytes); split it into smaller notes`;
  const result = makePipelineResult({
    id: 'note_size',
    name: 'vaultd',
    status: 'error',
    code: 'NOTE_TOO_LARGE',
    message,
  });
  // Appending, not rewriting: the note is too large to parse, and its text must survive as is.
  await appendFile(claimed, `\n\n## Tool Results\n\n${renderResult(result)}\n`);
  logPseudo(ctx, key, 'NOTE_TOO_LARGE', message);
  await moveNoOverwrite(claimed, ctx.layout.failed, basename(claimed));
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

/** The vault-relative path of a note, as the ledger, logs and events name it. */
export function noteKey(ctx: PipelineContext, path: string): string {
  return relative(ctx.layout.root, path).split('\\').join('/');
}

export type { FoundCall };

function isToolResult(value: unknown, id: string): value is ToolResult {
  if (value === null || typeof value !== 'object') return false;
  const r = value as Partial<ToolResult>;
  return (
    r.id === id &&
    typeof r.name === 'string' &&
    typeof r.status === 'string' &&
    typeof r.content === 'string'
  );
}
