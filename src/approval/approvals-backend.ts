import type { Executor } from '../execute/executor.ts';
import type { ApiDecision, ApprovalsBackend, ApprovalView } from '../observe/approvals-api.ts';
import { compileGrant, grantToolName } from './grants.ts';
import type { ApprovalGate } from './gate.ts';
import { isWaiting, type ApprovalRequest } from './requests.ts';

/**
 * The approvals the HTTP API lists and decides, on the daemon's gate: a decision is recorded on
 * the pending request (channel `http`, by `api`), then `onDecided` looks at the note so the call
 * runs (or is rejected) at once. Edited parameters that are not valid for the tool are refused
 * (400) and the request stays pending, as an edit ticked in the note keeps the call waiting:
 * recorded, the approval was consumed by a call that failed with INVALID_PARAMS, and the agent's
 * call was lost (review finding F4).
 * @param gate the daemon's gate (with its request store).
 * @param onDecided told which request was decided, to queue its note.
 * @param checker the daemon's executor, whose `check` validates edited parameters for the tool.
 */
export function approvalsBackend(
  gate: ApprovalGate,
  onDecided: (request: ApprovalRequest) => void,
  checker: Pick<Executor, 'check'>,
): ApprovalsBackend {
  return {
    list: () => (gate.requests?.pending() ?? []).filter((r) => isWaiting(r)).map(view),
    async decide(id: string, input: ApiDecision) {
      const request = gate.requests?.get(id);
      if (request === undefined)
        return { ok: false, status: 404, message: `no approval request ${id}` };
      if (input.scope !== undefined) {
        const compiled = compileGrant(input.scope);
        if (typeof compiled === 'string')
          return { ok: false, status: 400, message: `scope: ${compiled}` };
        // The tool itself, not a name it begins (`send_notification_all` on a send_notification)
        if (grantToolName(input.scope) !== request.tool)
          return { ok: false, status: 400, message: `scope does not name ${request.tool}` };
      }
      if (input.decision === 'approve' && input.arguments !== undefined) {
        const checked = checker.check({
          id: request.callId,
          name: request.tool,
          arguments: input.arguments,
        });
        if (!checked.ok) {
          return {
            ok: false,
            status: 400,
            message: `the edited arguments are not valid (${checked.error.message}); the request is still pending`,
          };
        }
      }
      const outcome = await gate.decide(id, {
        kind: input.decision,
        always: input.always === true || input.scope !== undefined,
        scope: input.scope?.trim() ?? null,
        channel: 'http',
        by: 'api',
        at: new Date().toISOString(),
        reason: input.reason ?? null,
        arguments: input.arguments ?? null,
      });
      if (!outcome.ok) return { ok: false, status: 409, message: outcome.problem };
      onDecided(outcome.request);
      return { ok: true, view: view(outcome.request) };
    },
  };
}

function view(request: ApprovalRequest): ApprovalView {
  return {
    id: request.id,
    note: request.note,
    call_id: request.callId,
    tool: request.tool,
    arguments: request.arguments,
    preview: request.preview,
    reason: request.reason,
    requested_at: request.requestedAt,
    expires_at: request.expiresAt,
    state: request.state,
  };
}
