import {
  EXPIRED_REASON,
  readAllowedTools,
  rejectionMessage,
  type ApprovalRequest,
  type ApprovalSectionRead,
  type Authorization,
  type GateCall,
  type MoveFolder,
  type PendingCall,
  type PendingDecision,
  toolIdentity,
  pinnedRule,
} from '../approval/index.ts';
import type { FoundCall, InvalidBlock, ParsedNote } from '../note/types.ts';
import { effectsOf, type Effects } from '../protocol/effects.ts';
import { hashArguments, hashSchema } from '../protocol/hash-arguments.ts';
import type { Tool, ToolCall, ToolResult } from '../protocol/types.ts';
import { callKey, fsyncDirectory, VaultIoError } from '../vault/index.ts';
import { DuplicateIntentError } from '../vault/ledger.ts';
import type { FolderKind } from '../vault/watcher.ts';
import type { PipelineContext } from './context.ts';
import { makePipelineResult } from './make-result.ts';
import { ledgerKeysOf } from './note-ledger.ts';
import { changedBasis, makePreview } from './preview.ts';
import { replayResult } from './replay.ts';
import { yieldAtItem, yieldWhenSpent } from '../protocol/slice.ts';

/** A result and the offset of its block, for writing results in block order. */
export interface Ordered {
  readonly result: ToolResult;
  readonly order: number;
}

/** A claimed note being worked on. */
export interface NoteWork {
  /** Absolute path in `In_Progress/`. */
  readonly path: string;
  /** Vault-relative path in `In_Progress/`, as the ledger and requests name it. */
  readonly key: string;
  /** The note's name before it was claimed. */
  readonly name: string;
  /** Where it was claimed from; `in_progress` when it is resumed. */
  readonly from: FolderKind;
  /**
   * The folder a human moved the note to, to decide, when it was taken from there: also for a
   * note resumed after a kill at that claim (recorded with its requests).
   */
  readonly movedTo: MoveFolder | null;
  /** Vault-relative path it had before the claim (where a human decided), for records. */
  readonly origin: string;
  readonly text: string;
  readonly parsed: ParsedNote;
}

/** What deciding and running a note's calls gave. */
export interface Settled {
  readonly results: Ordered[];
  readonly pending: PendingCall[];
  /** The arguments each call ran with (a human may have edited them). */
  readonly ranArguments: Map<string, Record<string, unknown>>;
  /** Whether any call with side effects ran (the write-back must then be durable). */
  readonly sideEffects: boolean;
  /** Ledger keys of the calls with side effects whose results go into this note. */
  readonly ledgerKeys: string[];
  /** An infrastructure failure that stopped a call before it ran: the note must wait. */
  readonly deferred: VaultIoError | undefined;
}

/** A call that passed every check, with its permission. */
interface Runnable {
  readonly call: ToolCall;
  readonly auth: Authorization;
  readonly effects: Effects;
  readonly key: string | null;
  readonly originalArguments: Record<string, unknown> | undefined;
  readonly request: ApprovalRequest | undefined;
  readonly order: number;
}

/** A call that needs a human. */
interface Asking {
  readonly found: FoundCall;
  readonly tool: Tool;
  readonly gateCall: GateCall;
  readonly effects: Effects;
  readonly key: string | null;
  readonly reason: string;
  readonly order: number;
}

const DECISION_FOLDERS: ReadonlySet<FolderKind> = new Set(['pending', 'approved', 'rejected']);

/**
 * Decide every call of a claimed note that has no result yet and run what may run: check it,
 * look up its history in the ledger (a call with side effects that already ran is replayed, one
 * whose outcome is unknown goes to a human), ask the gate, apply a human's decision bound to a
 * pending request, and run the calls the gate allowed, concurrently within the global cap.
 * @param ctx the pipeline context.
 * @param work the claimed note.
 */
export async function settleCalls(ctx: PipelineContext, work: NoteWork): Promise<Settled> {
  const { parsed } = work;
  const results: Ordered[] = [];
  const runnable: Runnable[] = [];
  const asking: Asking[] = [];
  const ledgerKeys = new Set<string>();
  const section = await ctx.notes.approval(work.text);
  const allowed = readAllowedTools(parsed.data['allowed_tools']);
  const error = (order: number, input: Parameters<typeof makePipelineResult>[0]): void => {
    results.push({ order, result: makePipelineResult(input) });
  };

  // A note may hold thousands of calls: every loop over them lets the event loop run between
  // slices (see slice.ts).
  for (const block of parsed.invalid) {
    await yieldWhenSpent();
    if (!parsed.results.has(block.id))
      results.push({ order: block.start.offset, result: invalidBlockResult(block) });
  }

  if (work.from === 'in_progress') {
    // A note resumed after a kill that came once its results were written back, before the
    // ledger was told: the entries of its answered calls are marked written now, or they stayed
    // unwritten for good (a later note of the same name had its calls replayed for ever instead
    // of run). Looked up by call, not by a pass over the whole ledger for each resumed note.
    const answered = parsed.calls.filter((c) => parsed.results.has(c.id));
    for (const key of await ledgerKeysOf(ctx, answered, work.name)) {
      const entry = ctx.ledger.lookup(key);
      if (entry !== undefined && entry.status !== null && !entry.written) ledgerKeys.add(key);
    }
  }

  for (const found of parsed.calls) {
    await yieldWhenSpent();
    const order = found.start.offset;
    // An answered call is skipped before its check, which reads the file system for its path
    // parameters: a note of thousands of answered calls is looked at again and again.
    const previous = parsed.results.get(found.id);
    if (previous !== undefined && !mayRunAgain(previous, found.arguments)) continue;
    const checked = ctx.executor.check({
      id: found.id,
      name: found.name,
      arguments: found.arguments,
    });
    if (!checked.ok) {
      // Unknown tool or bad parameters: no human is asked about a call that cannot run.
      results.push({
        order,
        result: await ctx.executor.execute(
          { id: found.id, name: found.name, arguments: found.arguments },
          { note: work.key },
        ),
      });
      continue;
    }
    const { tool, args } = checked;
    const effects = await effectsOf(tool, args, await ctx.executor.facts(tool));
    const argsHash = hashArguments(args);
    const gateCall: GateCall = {
      id: found.id,
      name: tool.name,
      arguments: args,
      spelledPaths: checked.spelledPaths,
      argsHash,
      safety: effects.safety,
      effects,
      allowedTools: allowed.allowed,
      identity: toolIdentity(tool),
    };
    let key: string | null = null;
    let uncertain: string | null = null;
    if (!effects.readOnly) {
      key = callKey({ id: found.id, explicitId: found.explicitId, argsHash }, work.name);
      if (ctx.ledger.isInFlight(key)) await ctx.ledger.settled(key);
      const history = ctx.ledger.lookup(key);
      if (history !== undefined && found.explicitId && history.tool !== tool.name) {
        // The key of an explicit id holds the id and the arguments, not the tool: a move_file
        // with the id and arguments an earlier copy_file had would be taken for that call, its
        // result replayed and the move never run. An id names one call: this one needs its own.
        error(order, {
          id: found.id,
          name: tool.name,
          status: 'error',
          code: 'INVALID_CALL',
          message: `the id "${found.id}" with these parameters already named a ${history.tool} call (in ${history.writtenTo ?? history.note}); an id names one call: give this ${tool.name} call an id of its own, or none`,
          safety: effects.safety,
        });
        continue;
      }
      if (
        history !== undefined &&
        history.status === 'interrupted' &&
        !history.written &&
        history.note === work.key
      ) {
        // This very note was being written back with its `interrupted` result when vaultd
        // stopped again: write that result, as recorded.
        const recorded = await ctx.ledger.result(key);
        results.push({
          order,
          result: isToolResult(recorded, found.id) ? recorded : interruptedResult(found, effects),
        });
        ledgerKeys.add(key);
        continue;
      } else if (history !== undefined && history.status === 'interrupted') {
        // Its result was deleted (or left out of a copy): only a human can say whether it acted.
        uncertain = `this call was cut off earlier (in ${history.writtenTo ?? history.note}), so it may or may not have taken effect; approve only if it should run again`;
      } else if (history !== undefined && history.status !== null) {
        if (history.status === 'success' || history.effect) {
          results.push({ order, result: await replayResult(ctx, key, history, found) });
          ledgerKeys.add(key);
          continue;
        }
      } else if (history !== undefined) {
        if (history.note === work.key) {
          const result = interruptedResult(found, effects);
          await ctx.ledger.recordDone(key, 'interrupted', true, result);
          results.push({ order, result });
          ledgerKeys.add(key);
          continue;
        }
        uncertain = `an earlier run of this call (in ${history.note}, ${new Date(history.intentAt).toISOString()}) was cut off, so it may or may not have taken effect; approve only if it should run again`;
      } else if (ctx.ledger.mayHaveLost(found.id)) {
        uncertain =
          "vaultd's ledger was damaged and may have held this call's history, so it may already have run; approve only if it has not";
      } else if (work.from === 'in_progress' && ctx.untrustedNotes.has(work.path)) {
        uncertain =
          "vaultd's ledger was missing or damaged when this note was resumed, so this call may already have run; approve only if it has not";
      }
    }
    const verdict = ctx.gate.evaluate(gateCall);
    if (verdict.action === 'deny') {
      error(order, {
        id: found.id,
        name: found.name,
        status: 'error',
        code: 'PERMISSION_DENIED',
        message: verdict.message,
        safety: effects.safety,
      });
      continue;
    }
    if (
      verdict.action === 'run' &&
      uncertain === null &&
      !(await decidedByHuman(ctx, work, section, found, tool, gateCall))
    ) {
      runnable.push({
        call: { id: found.id, name: tool.name, arguments: args },
        auth: verdict.auth,
        effects,
        key,
        originalArguments: undefined,
        request: undefined,
        order,
      });
      continue;
    }
    asking.push({
      found,
      tool,
      gateCall,
      effects,
      key,
      reason:
        uncertain ??
        (verdict.action === 'ask'
          ? verdict.reason
          : 'a human was asked about this call; their decision stands'),
      order,
    });
  }

  const pending: PendingCall[] = [];
  for (const ask of asking) {
    await yieldWhenSpent();
    const outcome = await decideAsking(ctx, work, section, ask);
    if (outcome.kind === 'result') results.push({ order: ask.order, result: outcome.result });
    else if (outcome.kind === 'run') runnable.push(outcome.runnable);
    else pending.push(outcome.pending);
  }

  let deferred: VaultIoError | undefined;
  // The ledger names calls by key, but the claim's rename must be durable before the first intent:
  // a power cut could otherwise bring the note back to the inbox and run the call again. Only
  // notes with side effects pay for these fsyncs.
  let synced: Promise<void> | undefined;
  const durable = (): Promise<void> =>
    (synced ??= fsyncDirectory(ctx.layout.inProgress).then(() =>
      work.from === 'in_progress' ? undefined : fsyncDirectory(folderOf(ctx, work.from)),
    ));
  // Keys of calls another copy of the note runs (see runOne): not this note's to mark written.
  const notOurs = new Set<string>();
  // At most as many of the note's calls are handed to the executor as it runs at once: each call
  // waiting there holds a logger, a signal and a chain of promises, and a note may hold 60,000.
  const ran: (Ordered | null)[] = new Array<Ordered | null>(runnable.length).fill(null);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < runnable.length) {
      const i = next++;
      await yieldWhenSpent();
      ran[i] = await runOne(ctx, work, runnable[i] as Runnable, durable, notOurs).catch(
        (failure: unknown) => {
          if (failure instanceof VaultIoError) {
            deferred ??= failure;
            return null;
          }
          next = runnable.length;
          throw failure;
        },
      );
    }
  };
  const lanes = Math.max(1, Math.min(ctx.config.concurrency, runnable.length));
  await Promise.all(Array.from({ length: lanes }, lane));
  for (const item of ran) if (item !== null) results.push(item);
  const ranArguments = new Map<string, Record<string, unknown>>();
  let sideEffects = false;
  for (const [i, r] of runnable.entries()) {
    await yieldAtItem(i);
    ranArguments.set(r.call.id, r.call.arguments);
    if (!r.effects.readOnly) sideEffects = true;
    if (r.key !== null && !notOurs.has(r.key)) ledgerKeys.add(r.key);
  }
  // No secret of the config ever reaches a note, the log or the event stream through a result.
  for (const [i, item] of results.entries()) {
    await yieldWhenSpent();
    const safe = ctx.redact.deep(item.result);
    if (safe !== item.result) results[i] = { order: item.order, result: safe };
  }
  // Each result names the arguments as the agent wrote them, so a call fixed later is told apart.
  const written = new Map<string, string>();
  for (const c of parsed.calls) {
    await yieldWhenSpent();
    written.set(c.id, hashArguments(c.arguments));
  }
  for (const b of parsed.invalid) if (b.argsHash !== undefined) written.set(b.id, b.argsHash);
  for (const [i, item] of results.entries()) {
    await yieldWhenSpent();
    const hash = written.get(item.result.id);
    if (hash === undefined || item.result.metadata.replay !== undefined) continue;
    results[i] = {
      order: item.order,
      result: { ...item.result, metadata: { ...item.result.metadata, arguments_hash: hash } },
    };
  }
  return { results, pending, ranArguments, sideEffects, ledgerKeys: [...ledgerKeys], deferred };
}

type AskOutcome =
  | { readonly kind: 'result'; readonly result: ToolResult }
  | { readonly kind: 'run'; readonly runnable: Runnable }
  | { readonly kind: 'wait'; readonly pending: PendingCall };

/** The request a call's part of the Approval section names, and whether it is this call's. */
type AskedRequest = {
  readonly decision: PendingDecision | undefined;
  readonly nonce: string | null;
} & (
  | { readonly ours: true; readonly request: ApprovalRequest }
  | { readonly ours: false; readonly request: ApprovalRequest | undefined }
);

/**
 * The request the note's Approval section names for a call (by its nonce), and whether vaultd
 * asked it about this call of this note: a nonce copied from another note, or another call's,
 * decides nothing here.
 */
function askedRequest(
  ctx: PipelineContext,
  work: NoteWork,
  section: ApprovalSectionRead,
  found: FoundCall,
): AskedRequest {
  const decision = section.decisions.get(found.id);
  const nonce = decision?.nonce ?? null;
  const requests = ctx.gate.requests;
  // A section that says nothing of the call (a person deleted it before moving the note to
  // decide; the write-back of a call about to run took it out, then vaultd stopped): the latest
  // request recorded for this call of this very note (bound to its claim) is the one asked; it
  // was asked again (review and crash campaign findings). A part without a nonce (an agent's)
  // never stands for it.
  const request =
    nonce !== null
      ? requests?.get(nonce)
      : decision !== undefined
        ? undefined
        : requests?.forCall(found.id).findLast((r) => r.note === work.key && r.tool === found.name);
  if (
    request !== undefined &&
    request.note === work.key &&
    request.callId === found.id &&
    request.tool === found.name
  ) {
    return { decision, nonce, request, ours: true };
  }
  return { decision, nonce, request, ours: false };
}

/**
 * The request asked about a call, approved again when vaultd stopped between using the human's
 * approval and starting the call: the request is consumed when the call is handed to the
 * executor, its intent recorded in the ledger only once the call has a slot, so a stop in between
 * (a restart while the call waited behind others, a crash) left a consumed approval and a call
 * that never started. The resumed note rejected the call as "already consumed", or asked the
 * human again (crash campaign finding). Only for the note's own claim, resumed, and only when the
 * ledger holds nothing of the call (nor may have lost it): a call that started is never run
 * again.
 */
async function stillApproved(
  ctx: PipelineContext,
  work: NoteWork,
  ask: Asking,
  asked: AskedRequest,
): Promise<AskedRequest> {
  const requests = ctx.gate.requests;
  if (
    requests === undefined ||
    !asked.ours ||
    asked.request.state !== 'consumed' ||
    asked.request.decision?.kind !== 'approve' ||
    work.from !== 'in_progress' ||
    ctx.ledger.mayHaveLost(ask.found.id) ||
    (ask.key !== null && ctx.ledger.lookup(ask.key) !== undefined) ||
    ctx.ledger.entries().some((e) => e.callId === ask.found.id && e.note === work.key)
  ) {
    return asked;
  }
  if (!(await requests.setState(asked.request.id, 'approved', ['consumed']))) return asked;
  const request = requests.get(asked.request.id) ?? asked.request;
  ctx.logger.info(
    { note: work.key, call: ask.found.id, request: request.id },
    'approval kept: vaultd stopped before the approved call started',
  );
  return { ...asked, request, ours: true };
}

/**
 * A call that needs a human: apply the decision bound to its pending request when the note is
 * the request's own (claimed from a decision folder), refuse a decision anywhere else, or put it
 * before a human with a fresh request.
 */
async function decideAsking(
  ctx: PipelineContext,
  work: NoteWork,
  section: ApprovalSectionRead,
  ask: Asking,
): Promise<AskOutcome> {
  const { found, gateCall, effects } = ask;
  const requests = ctx.gate.requests;
  const { decision, nonce, request, ours } = await stillApproved(
    ctx,
    work,
    ask,
    askedRequest(ctx, work, section, found),
  );
  const reject = (message: string, reason = 'no pending approval for this call'): AskOutcome => ({
    kind: 'result',
    result: makePipelineResult({
      id: found.id,
      name: found.name,
      status: 'rejected',
      code: 'REJECTED',
      message,
      safety: effects.safety,
      data: { reason },
    }),
  });

  if (ours && request.argsHash !== gateCall.argsHash) {
    // The call in the note was changed after vaultd asked: the decision was not about this call.
    await requests?.setState(request.id, 'superseded');
    return waitFor(ctx, work, ask, [
      'the parameters of the tool_call block changed after vaultd asked; decide again on the call as it is now',
    ]);
  }
  if (ours && request.schemaHash !== undefined && request.schemaHash !== hashSchema(ask.tool)) {
    // The tool changed (an MCP server's new schema, a config reload): an approval, above all an
    // edited one, would run with parameters or defaults the human was never shown.
    await requests?.setState(request.id, 'superseded');
    return waitFor(ctx, work, ask, [
      `the parameters ${found.name} takes changed after vaultd asked; decide again on the call as it is now`,
    ]);
  }
  if (ours && request.state === 'expired') {
    await requests?.setState(request.id, 'consumed');
    return reject(rejectionMessage(EXPIRED_REASON), EXPIRED_REASON);
  }
  if (ours && request.state === 'consumed' && work.from === 'in_progress') {
    // A rejection (or an expiry) used before vaultd stopped, its result not written yet: the
    // same answer again. The resumed note asked the human again (crash audit). An approval used
    // so is stillApproved's.
    const decided = request.decision;
    if (decided?.kind === 'reject') {
      return reject(
        rejectionMessage(decided.reason ?? undefined, howRejected(decided)),
        decided.reason ?? 'no reason given',
      );
    }
    if (decided === null && Date.parse(request.expiresAt) <= Date.now()) {
      return reject(rejectionMessage(EXPIRED_REASON), EXPIRED_REASON);
    }
  }
  if (ours && request.state === 'superseded') {
    // vaultd voided the request it asked (a file under its preview changed after it was made)
    // and stopped before it asked again: it asks now. Only a resumed claim can name its own
    // voided request (a claim binds none), and the tick on it was about a question that no
    // longer stands: the call was rejected as "already superseded" (crash audit).
    return waitFor(ctx, work, ask, [
      'vaultd stopped while it was asking again about this call (what it showed you had changed); decide on it as it is now',
    ]);
  }
  if (
    ours &&
    (request.state === 'pending' || request.state === 'approved' || request.state === 'rejected')
  ) {
    let current = request;
    if (current.state === 'pending' && Date.parse(current.expiresAt) <= Date.now()) {
      await requests?.setState(current.id, 'consumed');
      return reject(rejectionMessage(EXPIRED_REASON), EXPIRED_REASON);
    }
    if (current.state === 'pending') {
      const vault = vaultDecision(ctx, work, section, decision);
      if (vault.kind === 'wait') {
        // Parameters a human edited stay edited while the call waits (another call was decided).
        return waitFor(ctx, work, ask, vault.problems, current, decision?.arguments ?? undefined);
      }
      const editedHere = vault.decision.arguments;
      if (
        vault.decision.kind !== 'reject' &&
        editedHere !== null &&
        hashArguments(editedHere) !== hashArguments(current.arguments)
      ) {
        // An edit in the note that is not valid keeps the call waiting, with the edit and why, as
        // unreadable JSON there does (it failed the call, the agent's work lost to a typo).
        const checked = ctx.executor.check({
          id: found.id,
          name: found.name,
          arguments: editedHere,
        });
        if (!checked.ok) {
          return waitFor(
            ctx,
            work,
            ask,
            [
              `the parameters you edited are not valid (${checked.error.message}); correct them and tick approve again, or reject the call`,
            ],
            current,
            editedHere,
          );
        }
      }
      const recorded = await ctx.gate.decide(current.id, vault.decision);
      if (!recorded.ok)
        return reject(`${recorded.problem}; write the call again if it is still needed`);
      current = recorded.request;
    }
    const decided = current.decision;
    if (current.state === 'rejected' || decided?.kind === 'reject') {
      await requests?.setState(current.id, 'consumed');
      return reject(
        rejectionMessage(decided?.reason ?? undefined, howRejected(decided)),
        decided?.reason ?? 'no reason given',
      );
    }
    // Approved: the arguments as the human left them are checked again, and a deny still wins.
    const edited = decided?.arguments ?? null;
    let call = gateCall;
    let originalArguments: Record<string, unknown> | undefined;
    if (edited !== null && hashArguments(edited) !== hashArguments(request.arguments)) {
      const checked = ctx.executor.check({ id: found.id, name: found.name, arguments: edited });
      if (!checked.ok) {
        await requests?.setState(current.id, 'consumed');
        return {
          kind: 'result',
          result: makePipelineResult({
            id: found.id,
            name: found.name,
            status: 'error',
            code: 'INVALID_PARAMS',
            message: `the parameters a human edited are invalid: ${checked.error.message}`,
            safety: effects.safety,
            approvedBy: 'human-modified',
          }),
        };
      }
      const editedEffects = await effectsOf(
        checked.tool,
        checked.args,
        await ctx.executor.facts(checked.tool),
      );
      call = {
        ...gateCall,
        arguments: checked.args,
        spelledPaths: checked.spelledPaths,
        argsHash: hashArguments(checked.args),
        safety: editedEffects.safety,
        effects: editedEffects,
      };
      originalArguments = { ...gateCall.arguments };
    }
    const verdict = ctx.gate.evaluate(call);
    if (verdict.action === 'deny') {
      await requests?.setState(current.id, 'consumed');
      return {
        kind: 'result',
        result: makePipelineResult({
          id: found.id,
          name: found.name,
          status: 'error',
          code: 'PERMISSION_DENIED',
          message: verdict.message,
          safety: effects.safety,
        }),
      };
    }
    const stale = await changedBasis(current.basis);
    if (stale.length > 0) {
      // The human approved a change to a file that changed since: show it again, never overwrite.
      await requests?.setState(current.id, 'superseded');
      return waitFor(ctx, work, ask, [
        `${stale.map((p) => relativePath(ctx, p)).join(', ')} changed after the preview was made; look at the new preview and decide again`,
      ]);
    }
    if (
      ask.key !== null &&
      ctx.ledger.lookup(ask.key) !== undefined &&
      !ctx.ledger.isInFlight(ask.key)
    ) {
      // A human decided that a call whose outcome was unknown may run again. Forgotten before
      // the approval is used: forgotten after, a kill between the two left a used approval and
      // the history that says the call may have run, and the resumed note rejected the call as
      // "already consumed" (crash audit). A kill now leaves the approval to be used on resume.
      await ctx.ledger.forget(ask.key);
    }
    const consumed = await ctx.gate.consume(current, call, work.origin);
    if (!consumed.ok)
      return reject(`${consumed.problem}; write the call again if it is still needed`);
    return {
      kind: 'run',
      runnable: {
        call: { id: found.id, name: found.name, arguments: { ...call.arguments } },
        auth: consumed.auth,
        effects: call.effects ?? effects,
        key:
          ask.key === null
            ? null
            : callKey(
                { id: found.id, explicitId: found.explicitId, argsHash: call.argsHash },
                work.name,
              ),
        originalArguments,
        request: current,
        order: ask.order,
      },
    };
  }
  const decisionSaysRun =
    decision !== undefined && (decision.decision === 'approve' || decision.decision === 'always');
  const movedToDecide = work.movedTo !== null;
  if (decisionSaysRun || (movedToDecide && decision !== undefined)) {
    // A ticked box in a note vaultd is not waiting on (a copy, a replay, the inbox): never a decision.
    const why =
      request?.state === 'expired'
        ? 'the approval expired'
        : request !== undefined && request.state !== 'pending'
          ? `the request was already ${request.state}`
          : DECISION_FOLDERS.has(work.from) || work.movedTo !== null
            ? 'vaultd is not waiting on this call in this note'
            : 'decisions count only on a note vaultd moved to Pending_Approval/, never on a note in the inbox';
    ctx.logger.warn(
      { note: work.key, call: found.id, tool: found.name, nonce },
      'decision refused: no pending approval for this call',
    );
    return reject(
      `no pending approval for this call (${why}); the call was not run. If it is still needed, write it again as a new call and wait for a human's decision`,
    );
  }
  return waitFor(ctx, work, ask, []);
}

/** How a human rejected a call, for its result. */
function howRejected(decided: ApprovalRequest['decision']): string {
  return decided?.channel === 'move'
    ? 'moved the note to the rejected folder'
    : decided?.channel === 'tick'
      ? 'ticked reject'
      : `rejected it through ${decided?.channel === 'cli' ? 'vaultd reject' : 'the HTTP API'}`;
}

/** Put a call before a human (a fresh request unless one is pending for it here) and wait. */
async function waitFor(
  ctx: PipelineContext,
  work: NoteWork,
  ask: Asking,
  problems: readonly string[],
  existing?: ApprovalRequest,
  shown?: Record<string, unknown>,
): Promise<AskOutcome> {
  const cap = ctx.config.approval.max_pending;
  if (existing === undefined && (ctx.gate.requests?.pendingCount ?? 0) >= cap) {
    // Each waiting request is kept in memory (and its note re-read when it changes): an agent
    // writing notes of thousands of dangerous calls must not grow them without end.
    return {
      kind: 'result',
      result: makePipelineResult({
        id: ask.found.id,
        name: ask.found.name,
        status: 'error',
        code: 'RATE_LIMITED',
        message: `${cap} calls already wait for a human's decision (config approval.max_pending), so this one was not put before a human and did not run. Move the note back to the inbox, or write the call again, once some were decided`,
        safety: ask.effects.safety,
      }),
    };
  }
  // A call that already waits keeps the preview the human was shown; a new request gets one.
  const preview =
    existing === undefined ? await makePreview(ctx, ask.tool, ask.gateCall.arguments) : undefined;
  let request = existing;
  if (request === undefined) {
    request = await ctx.gate.ask({
      note: work.key,
      call: ask.gateCall,
      reason: ask.reason,
      preview: preview ?? null,
      schemaHash: hashSchema(ask.tool),
    });
    // An approval of this call left behind (a crash after the decision, then the call asked
    // again) is void now: only the new request can let it run.
    await ctx.gate.requests?.supersedeOlder(request);
  }
  // The "always allow" box's rule, when the tool pins parameters to this call's values.
  const alwaysRule = pinnedRule(ask.tool, request.arguments);
  return {
    kind: 'wait',
    pending: {
      id: ask.found.id,
      name: ask.found.name,
      arguments: shown ?? request.arguments,
      requestedAt: request.requestedAt,
      expiresAt: request.expiresAt,
      nonce: request.id,
      reason: ask.reason,
      ...(request.preview === null ? {} : { preview: request.preview }),
      ...(request.previewKind === undefined ? {} : { previewKind: request.previewKind }),
      ...(problems.length > 0 ? { problems } : {}),
      ...(alwaysRule === undefined ? {} : { alwaysRule }),
    },
  };
}

type VaultDecision =
  | { readonly kind: 'wait'; readonly problems: readonly string[] }
  | {
      readonly kind: 'decided';
      readonly decision: Parameters<PipelineContext['gate']['decide']>[1];
    };

/**
 * Whether a human was asked about a call the gate would now let run (a grant or an allow rule
 * that came after the question) and has decided it, or whether their decision is now being made:
 * then the decision stands, through {@link decideAsking}. A call rejected through the API, or
 * ticked rejected, ran under a grant given on another call of the note after the question, and
 * an approval with edited parameters ran with the agent's (review finding). An expired question
 * ends the call rejected as expired, as it does without a grant. A question nobody has answered
 * yet, still in time, is withdrawn (superseded) and the call runs as the gate says; when the
 * request cannot be withdrawn, a decision came meanwhile, and it stands.
 */
async function decidedByHuman(
  ctx: PipelineContext,
  work: NoteWork,
  section: ApprovalSectionRead,
  found: FoundCall,
  tool: Tool,
  call: GateCall,
): Promise<boolean> {
  const requests = ctx.gate.requests;
  const { decision, request, ours } = askedRequest(ctx, work, section, found);
  if (
    requests === undefined ||
    !ours ||
    // A question about other parameters or another schema was not about this call.
    request.argsHash !== call.argsHash ||
    (request.schemaHash !== undefined && request.schemaHash !== hashSchema(tool))
  ) {
    return false;
  }
  if (request.state === 'approved' || request.state === 'rejected' || request.state === 'expired')
    return true;
  if (request.state !== 'pending') return false;
  // Past its expiry it is expired whether or not the sweep has marked it yet: it ends rejected as
  // expired either way, never one way or the other by the sweep's timing (review finding).
  if (Date.parse(request.expiresAt) <= Date.now()) return true;
  if (vaultDecision(ctx, work, section, decision).kind === 'decided') return true;
  return !(await requests.setState(request.id, 'superseded', ['pending']));
}

/** What the note itself says: a ticked box, or the folder it was moved to. */
function vaultDecision(
  ctx: PipelineContext,
  work: NoteWork,
  section: ApprovalSectionRead,
  decision: PendingDecision | undefined,
): VaultDecision {
  if (!ctx.config.approval.vault_decisions) {
    // The section already says how to decide; a problem only answers a tick or a move.
    const tried = work.movedTo !== null || (decision?.decision ?? 'none') !== 'none';
    return {
      kind: 'wait',
      problems: tried
        ? [
            'decisions in the vault (ticks and moves) are turned off on this vault; decide with `vaultd approve` or the HTTP API',
          ]
        : [],
    };
  }
  const base = {
    at: new Date().toISOString(),
    scope: null,
    reason: decision?.reason ?? null,
  };
  if (work.movedTo === 'rejected') {
    return {
      kind: 'decided',
      decision: {
        ...base,
        kind: 'reject',
        always: false,
        channel: 'move',
        by: 'human',
        arguments: null,
      },
    };
  }
  if (decision === undefined && !section.found && work.movedTo === 'approved') {
    // Moved to approve with the section deleted: the move approves the call as vaultd asked about
    // it (the request's own arguments). The note went back to waiting with a problem telling the
    // person to move it, which they had done (review finding).
    return {
      kind: 'decided',
      decision: {
        ...base,
        kind: 'approve',
        always: false,
        channel: 'move',
        by: 'human',
        arguments: null,
      },
    };
  }
  if (decision === undefined && !section.found && work.from === 'in_progress') {
    // Resumed after a kill between asking and writing the section: there is nothing to correct,
    // the section is written now (it said "the note has no Approval section; move it…", a
    // problem no one made; crash audit).
    return { kind: 'wait', problems: [] };
  }
  if (decision === undefined) {
    const problems = section.found
      ? [
          ...section.problems,
          'the call is missing from the Approval section; restore its part or move the note to the rejected folder',
        ]
      : ['the note has no Approval section; move it to the approved or rejected folder to decide'];
    return { kind: 'wait', problems };
  }
  if (decision.problems.length > 0) return { kind: 'wait', problems: decision.problems };
  if (decision.arguments === null)
    return { kind: 'wait', problems: ['the parameters of this call cannot be read'] };
  if (decision.decision === 'reject') {
    return {
      kind: 'decided',
      decision: {
        ...base,
        kind: 'reject',
        always: false,
        channel: 'tick',
        by: 'human',
        arguments: null,
      },
    };
  }
  const approve = decision.decision === 'approve' || decision.decision === 'always';
  if (!approve && work.movedTo !== 'approved') return { kind: 'wait', problems: [] };
  return {
    kind: 'decided',
    decision: {
      ...base,
      kind: 'approve',
      always: decision.decision === 'always',
      scope: decision.decision === 'always' ? (decision.grantScope ?? null) : null,
      channel: approve ? 'tick' : 'move',
      by: 'human',
      arguments: { ...decision.arguments },
    },
  };
}

async function runOne(
  ctx: PipelineContext,
  work: NoteWork,
  r: Runnable,
  durable: () => Promise<void>,
  notOurs: Set<string>,
): Promise<Ordered> {
  const { call, key } = r;
  ctx.bus.emit('tool.call', {
    note: work.key,
    callId: call.id,
    tool: call.name,
    arguments: call.arguments,
  });
  let intentFailure: VaultIoError | undefined;
  let duplicate = false;
  const result = await ctx.executor.execute(call, {
    authorization: r.auth,
    // The note's own name: Obsidian finds it by name in whatever folder it ends up.
    note: work.name,
    signal: ctx.shutdown,
    ...(r.originalArguments === undefined ? {} : { originalArguments: r.originalArguments }),
    onIntent: async (c, tool) => {
      if (key === null) return;
      try {
        await durable();
        await ctx.ledger.recordIntent({
          key,
          note: work.key,
          callId: c.id,
          tool: tool.name,
          argsHash: r.auth.argsHash,
        });
      } catch (failure) {
        if (failure instanceof DuplicateIntentError) {
          // Not the disk's fault: another copy of the note runs or ran the call (below).
          duplicate = true;
          throw failure;
        }
        intentFailure =
          failure instanceof VaultIoError
            ? failure
            : new VaultIoError('record intent', ctx.ledger.path, failure);
        throw intentFailure;
      }
    },
    onProgress: (progress) =>
      ctx.bus.emit('tool.progress', { note: work.key, callId: call.id, tool: call.name, progress }),
  });
  // The call never started: the note waits for the disk (or whatever failed) instead of failing.
  if (intentFailure !== undefined) throw intentFailure;
  if (duplicate && key !== null) {
    // Another copy of the note runs the call (both passed their look at the ledger before either
    // recorded its intent): this one waits for it and gets its result, as a replay. The ledger's
    // entry is that copy's: this one neither records an outcome nor marks it written.
    notOurs.add(key);
    await ctx.ledger.settled(key);
    const history = ctx.ledger.lookup(key);
    if (history !== undefined && history.status !== null) {
      return { order: r.order, result: await replayResult(ctx, key, history, call) };
    }
    return { order: r.order, result };
  }
  if (key !== null && result.status !== 'interrupted') {
    // Kept until the note is written back: a crash in between then yields this result.
    await ctx.ledger.recordDone(key, result.status, mayHaveTakenEffect(result), result);
  }
  return { order: r.order, result };
}

/**
 * Whether a finished call with side effects may have taken effect, as the executor judged it
 * (success, a timeout, a failure the tool did not mark as before acting); unknown counts as yes.
 */
function mayHaveTakenEffect(result: ToolResult): boolean {
  return result.metadata.may_have_acted !== false;
}

function relativePath(ctx: PipelineContext, path: string): string {
  return path.startsWith(`${ctx.layout.root}/`) ? path.slice(ctx.layout.root.length + 1) : path;
}

function folderOf(ctx: PipelineContext, kind: FolderKind): string {
  const l = ctx.layout;
  return {
    inbox: l.inbox,
    pending: l.pending,
    approved: l.approved,
    rejected: l.rejected,
    in_progress: l.inProgress,
  }[kind];
}

/**
 * Whether a call that already has a result in the note runs again: an error or rejection whose
 * call now has other parameters than the result was for (the agent fixed it). A success never
 * runs twice; an interrupted call never runs again without a human (its history says so).
 * `vaultd check` says the same.
 * @param previous the result in the note: its status and arguments hash.
 * @param args the call's arguments as written now.
 */
export function mayRunAgain(
  previous: {
    readonly status: string;
    readonly argsHash?: string | undefined;
    readonly errorCode?: string | undefined;
  },
  args: Record<string, unknown>,
): boolean {
  if (previous.status !== 'error' && previous.status !== 'rejected') return false;
  // A block that could not be read as a call has no arguments: once it reads as one, it runs.
  if (previous.errorCode === 'INVALID_CALL' || previous.errorCode === 'INVALID_JSON') {
    return previous.argsHash === undefined;
  }
  return previous.argsHash !== undefined && previous.argsHash !== hashArguments(args);
}

function interruptedResult(found: FoundCall, effects: Effects): ToolResult {
  return makePipelineResult({
    id: found.id,
    name: found.name,
    status: 'interrupted',
    code: 'INTERRUPTED',
    message:
      'vaultd stopped while this call ran, so it may or may not have taken effect; it was not re-run. Check its effect; to run it again, delete this result and move the note back to the inbox (a human will be asked), or write a new call with a new id.',
    safety: effects.safety,
  });
}

function invalidBlockResult(block: InvalidBlock): ToolResult {
  const where = `line ${block.start.line}, column ${block.start.column}`;
  return makePipelineResult({
    id: block.id,
    name: block.name ?? 'unknown',
    status: 'error',
    code: block.code,
    message:
      block.argsHash !== undefined
        ? `the fenced block at ${where} is not closed, so its call did not run; vaultd closes a fence left open at the end of a note to write its results after it. To run the call, close the fence if it is still open, delete this result and move the note back to the inbox`
        : block.unclosed
          ? `the fenced block at ${where} is not closed; close it with a fence line of at least as many backticks, then move the note back to the inbox`
          : `${block.message} (block at ${where})`,
  });
}

function isToolResult(value: unknown, id: string): value is ToolResult {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { id?: unknown }).id === id &&
    typeof (value as { status?: unknown }).status === 'string'
  );
}
