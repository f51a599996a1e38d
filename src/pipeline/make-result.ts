import { ERROR_CODES, type ErrorCode } from '../protocol/errors.ts';
import type { ApprovedBy, ResultStatus, SafetyLevel, ToolResult } from '../protocol/types.ts';

/** Fields of a result that the pipeline makes itself, without running the tool. */
export interface PipelineResultInput {
  readonly id: string;
  readonly name: string;
  readonly status: Exclude<ResultStatus, 'success'>;
  readonly code: ErrorCode;
  readonly message: string;
  readonly safety?: SafetyLevel | null;
  readonly approvedBy?: ApprovedBy | null;
  readonly data?: unknown;
}

/**
 * Make the result of a call that the pipeline settles without running it: an invalid block, a
 * policy denial, a human rejection, an interrupted call.
 * @param input id, tool name, status, error code and the message for the agent.
 */
export function makePipelineResult(input: PipelineResultInput): ToolResult {
  return {
    id: input.id,
    name: input.name,
    success: false,
    status: input.status,
    content: `${input.code}: ${input.message}`,
    ...(input.data === undefined ? {} : { data: input.data }),
    error: {
      code: input.code,
      message: input.message,
      recoverable: ERROR_CODES[input.code].recoverable,
    },
    metadata: {
      execution_time_ms: 0,
      safety_level: input.safety ?? null,
      approved_by: input.approvedBy ?? null,
      attempts: 0,
      cached: false,
      finished_at: new Date().toISOString(),
    },
  };
}
