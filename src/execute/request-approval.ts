import type { Logger } from 'pino';
import { ERROR_CODES, type ResultError } from '../protocol/errors.ts';
import type { ApprovedBy, ResultStatus, Tool, ToolCall } from '../protocol/types.ts';
import { validateArguments } from '../protocol/validate.ts';
import { raceAbort } from './abort.ts';
import type { ApprovalDecision, ApprovalHandler } from './types.ts';

/** The call may run, with these arguments. */
export interface ApprovalGranted {
  readonly granted: true;
  readonly args: Record<string, unknown>;
  readonly approvedBy: ApprovedBy;
  readonly originalArguments?: Record<string, unknown>;
}

/** The call must not run: the result to give instead. */
export interface ApprovalRefused {
  readonly granted: false;
  readonly status: Exclude<ResultStatus, 'success'>;
  readonly error: ResultError;
  readonly approvedBy: ApprovedBy | null;
  readonly originalArguments?: Record<string, unknown>;
}

/** Inputs of {@link requestApproval}. */
export interface ApprovalInput {
  readonly tool: Tool;
  readonly call: ToolCall;
  /** The validated arguments. */
  readonly args: Record<string, unknown>;
  readonly handler: ApprovalHandler | undefined;
  readonly signal: AbortSignal | undefined;
  readonly logger: Logger;
  readonly config: Readonly<Record<string, unknown>>;
  readonly vault: string | undefined;
}

/**
 * Ask the approval handler about a dangerous call: approved runs as `human`, modified runs the new
 * arguments (validated again) as `human-modified`, denied is `REJECTED`; without a handler, or when
 * asking fails, the call is refused with `PERMISSION_DENIED`. Never rejects.
 * @param input the call, its tool, the handler and the shutdown signal.
 */
export async function requestApproval(
  input: ApprovalInput,
): Promise<ApprovalGranted | ApprovalRefused> {
  const { tool, call } = input;
  if (input.handler === undefined) {
    return refuse(
      'rejected',
      'PERMISSION_DENIED',
      `${tool.name} is a dangerous tool and needs a human's approval, but no approval handler is configured; the call was not run`,
    );
  }
  const preview = await makePreview(input);
  let decision: ApprovalDecision;
  try {
    const raced = await raceAbort(input.handler({ call, tool, preview }), input.signal);
    if (raced.aborted) {
      return refuse(
        'interrupted',
        'INTERRUPTED',
        `vaultd stopped while ${tool.name} waited for approval; it was not run`,
      );
    }
    decision = raced.value;
  } catch (error) {
    input.logger.error({ err: error }, 'approval handler failed');
    return refuse(
      'rejected',
      'PERMISSION_DENIED',
      `asking for approval of ${tool.name} failed (${messageOf(error)}); the call was not run`,
    );
  }
  switch (decision?.decision) {
    case 'approved':
      return { granted: true, args: input.args, approvedBy: 'human' };
    case 'denied': {
      const reason =
        typeof decision.reason === 'string' && decision.reason !== '' ? `: ${decision.reason}` : '';
      return refuse('rejected', 'REJECTED', `a human rejected this ${tool.name} call${reason}`);
    }
    case 'modified': {
      const checked = validateArguments(tool, decision.arguments);
      if (!checked.ok) {
        return {
          ...refuse(
            'error',
            'INVALID_PARAMS',
            `the parameters a human modified for ${tool.name} are invalid: ${checked.message}`,
          ),
          approvedBy: 'human-modified',
          originalArguments: call.arguments,
        };
      }
      return {
        granted: true,
        args: checked.args,
        approvedBy: 'human-modified',
        originalArguments: call.arguments,
      };
    }
    default:
      return refuse(
        'rejected',
        'PERMISSION_DENIED',
        `the approval handler gave an unknown decision ${JSON.stringify(decision)}; the call was not run`,
      );
  }
}

async function makePreview(input: ApprovalInput): Promise<string | undefined> {
  if (input.tool.preview === undefined) return undefined;
  try {
    const preview = await input.tool.preview(input.args, {
      config: input.config,
      vault: input.vault,
    });
    return typeof preview === 'string' ? preview : undefined;
  } catch (error) {
    input.logger.warn({ err: error, tool: input.tool.name }, 'tool preview failed');
    return undefined;
  }
}

function refuse(
  status: Exclude<ResultStatus, 'success'>,
  code: ResultError['code'],
  message: string,
): ApprovalRefused {
  return {
    granted: false,
    status,
    error: { code, message, recoverable: ERROR_CODES[code].recoverable },
    approvedBy: null,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
