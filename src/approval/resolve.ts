import { isModified } from './canonical-json.ts';
import { EXPIRED_REASON } from './expiry.ts';
import type { ApprovalSectionRead, PendingCall } from './section-types.ts';

/** Run the call with these arguments; `grant` asks to record an always-allow grant for the tool. */
export interface ApproveResolution {
  readonly kind: 'approve';
  readonly id: string;
  readonly name: string;
  /** The arguments to run (validate them again when `approvedBy` is `human-modified`). */
  readonly arguments: Record<string, unknown>;
  readonly approvedBy: 'human' | 'human-modified';
  /** The agent's arguments, when the human changed them. */
  readonly originalArguments?: Readonly<Record<string, unknown>>;
  readonly grant: boolean;
}

/** Write a `rejected` result carrying `message`. */
export interface RejectResolution {
  readonly kind: 'reject';
  readonly id: string;
  readonly name: string;
  readonly reason: string;
  /** For the result's error message: tells the agent what happened and what to do. */
  readonly message: string;
}

/** Keep waiting; `problems` (possibly empty: simply undecided) say what the human must fix. */
export interface WaitResolution {
  readonly kind: 'wait';
  readonly id: string;
  readonly name: string;
  readonly problems: readonly string[];
}

/** What to do with one pending call after reading the note. */
export type Resolution = ApproveResolution | RejectResolution | WaitResolution;

/** How the human moved the note: to the approved folder, the rejected folder, or not at all. */
export type MoveDecision = 'approve' | 'reject' | undefined;

/**
 * Turn what the Approval section says into an action per pending call. Moving the note to the
 * rejected folder rejects every call. Moving it to the approved folder approves every call that
 * has no ticked reject, using its parameters as they now are in the note. A call whose part of
 * the section is unreadable, or whose tool was changed, waits with problems, even when moved:
 * a call never runs with arguments a human may not have meant. Approved arguments that differ
 * from the original (canonical JSON) are `human-modified`.
 * @param pending the waiting calls as the daemon recorded them (ledger), the source of truth.
 * @param read the section as read by `readApprovalSection`.
 * @param move the folder the human moved the note to, if any.
 */
export function resolveDecisions(
  pending: readonly PendingCall[],
  read: ApprovalSectionRead,
  move?: MoveDecision,
): Resolution[] {
  return pending.map((call) => resolveOne(call, read, move));
}

function resolveOne(call: PendingCall, read: ApprovalSectionRead, move: MoveDecision): Resolution {
  const { id, name } = call;
  const decision = read.decisions.get(id);
  if (move === 'reject')
    return reject(call, decision?.reason, 'moved the note to the rejected folder');
  if (decision === undefined) {
    if (move === 'approve' && !read.found) return approve(call, call.arguments, false);
    const problem = read.found
      ? 'the call is missing from the Approval section; restore its part or move the note to the rejected folder'
      : 'the note has no Approval section; move it to the approved or rejected folder to decide';
    return { kind: 'wait', id, name, problems: [...read.problems, problem] };
  }
  if (decision.problems.length > 0) return { kind: 'wait', id, name, problems: decision.problems };
  if (decision.name !== name) {
    return {
      kind: 'wait',
      id,
      name,
      problems: [
        `the tool of this call was changed to "${decision.name ?? ''}"; change it back to "${name}"`,
      ],
    };
  }
  const args = decision.arguments;
  if (args === null)
    return { kind: 'wait', id, name, problems: ['the parameters of this call cannot be read'] };
  if (decision.decision === 'reject') return reject(call, decision.reason, 'ticked reject');
  if (decision.decision === 'approve' || decision.decision === 'always') {
    return approve(call, args, decision.decision === 'always');
  }
  if (move === 'approve') return approve(call, args, false);
  return { kind: 'wait', id, name, problems: [] };
}

function approve(
  call: PendingCall,
  args: Record<string, unknown>,
  grant: boolean,
): ApproveResolution {
  const modified = isModified(call.arguments, args);
  return {
    kind: 'approve',
    id: call.id,
    name: call.name,
    arguments: args,
    approvedBy: modified ? 'human-modified' : 'human',
    ...(modified ? { originalArguments: call.arguments } : {}),
    grant,
  };
}

function reject(call: PendingCall, reason: string | undefined, how: string): RejectResolution {
  return {
    kind: 'reject',
    id: call.id,
    name: call.name,
    reason: reason ?? 'no reason given',
    message: rejectionMessage(reason, how),
  };
}

/**
 * The message of a `rejected` result, for the agent: who rejected the call, why, and what to do.
 * @param reason the human's reason, or {@link EXPIRED_REASON}; undefined when none was given.
 * @param how how the human decided, e.g. `ticked reject`; defaults to a neutral wording.
 */
export function rejectionMessage(reason: string | undefined, how = 'rejected it'): string {
  if (reason === EXPIRED_REASON) {
    return 'No human decided on this call in time (approval expired). Write the call again only if it is still needed.';
  }
  const why = reason === undefined ? 'without giving a reason' : `with the reason: ${reason}`;
  return `A human rejected this call (${how}) ${why}. Do not retry it unchanged: change it as the reason asks, or find another way.`;
}
