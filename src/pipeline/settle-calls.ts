import {
  decideCall,
  EXPIRED_REASON,
  isExpired,
  readAllowedTools,
  readApprovalSection,
  rejectionMessage,
  resolveDecisions,
  type PendingCall,
  type Resolution,
} from '../approval/index.ts';
import { ApprovalRequests } from '../approval/requests.ts';
import type { InvalidBlock, ParsedNote } from '../note/types.ts';
import type { ApprovedBy, Tool, ToolCall, ToolResult } from '../protocol/types.ts';
import { fsyncDirectory, type LedgerCall } from '../vault/index.ts';
import type { PipelineContext } from './context.ts';
import { hashArguments } from './hash-arguments.ts';
import { makePipelineResult } from './make-result.ts';

/** A result and the offset of its block, for writing results in block order. */
export interface Ordered {
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

/** How a claimed note came to be worked on, as far as deciding its calls goes. */
export interface SettleOptions {
  /** Found in `In_Progress/` at start-up: calls with an intent but no result were interrupted. */
  readonly resume: boolean;
  /** What a pending call without a ticked box gets: moving the note to Approved/ or Rejected/. */
  readonly defaultDecision: 'approve' | 'reject' | 'none';
  /** The folder the note was claimed from, whose entry must be gone for good before an intent. */
  readonly claimedFrom: readonly string[];
}

/**
 * Decide every call of the note that has no result yet, apply a human's decisions from the
 * Approval section (or from the folder the note was moved to), and run what may run.
 */
export async function settleCalls(
  ctx: PipelineContext,
  key: string,
  text: string,
  parsed: ParsedNote,
  front: Readonly<Record<string, unknown>>,
  options: SettleOptions,
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
export function requestsOf(ctx: PipelineContext): ApprovalRequests {
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
