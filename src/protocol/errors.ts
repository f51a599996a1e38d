/**
 * The one catalogue of error codes that a tool result can carry. Codes are the API; messages are
 * prose that tells the agent what to change.
 */
export const ERROR_CODES = {
  INVALID_JSON: { recoverable: false, summary: 'the tool_call block is not valid JSON' },
  INVALID_CALL: {
    recoverable: false,
    summary: 'the block is JSON but not a tool_call of the documented shape',
  },
  INVALID_PARAMS: { recoverable: false, summary: 'the parameters do not match the tool schema' },
  UNKNOWN_TOOL: { recoverable: false, summary: 'no tool of that name is registered' },
  TIMEOUT: { recoverable: true, summary: 'the call ran longer than its timeout and was aborted' },
  PERMISSION_DENIED: { recoverable: false, summary: 'policy or the note forbids this call' },
  EXECUTION_FAILED: { recoverable: false, summary: 'the tool ran and failed' },
  REJECTED: { recoverable: false, summary: 'a human rejected the call' },
  RATE_LIMITED: { recoverable: true, summary: 'the tool is over its rate limit' },
  INTERRUPTED: {
    recoverable: false,
    summary: 'the daemon stopped while the call ran; it was not re-run',
  },
  NOTE_TOO_LARGE: {
    recoverable: false,
    summary: 'the note is over a configured cap: its size, or its number of calls',
  },
  NOTE_TOO_COMPLEX: {
    recoverable: false,
    summary: 'the note took longer than the deadline to parse (deeply nested lists and quotes)',
  },
  NOTE_NOT_TEXT: { recoverable: false, summary: 'the note is binary or not valid UTF-8' },
  UNSUPPORTED_FRONT_MATTER: { recoverable: false, summary: 'the front-matter is not YAML' },
} as const;

/** A code from the catalogue. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The error object carried by a failed result (SPEC section 3). */
export interface ResultError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly recoverable: boolean;
}

/** Options of a {@link ToolError}. */
export interface ToolErrorOptions {
  /** Whether trying again may succeed; defaults to the catalogue's value for the code. */
  recoverable?: boolean;
  /**
   * Whether the failure may have left a side effect (e.g. a message handed to a server). A tool
   * that sets this is never retried, whatever `recoverable` says.
   */
  sideEffect?: boolean;
  /** Structured detail for the result's `data`. */
  data?: unknown;
  cause?: unknown;
}

/**
 * The error a tool handler throws to choose its result's code. Any other thrown value becomes
 * `EXECUTION_FAILED` with the value's message.
 */
export class ToolError extends Error {
  readonly code: ErrorCode;
  readonly recoverable: boolean;
  readonly sideEffect: boolean;
  readonly data: unknown;

  constructor(code: ErrorCode, message: string, options: ToolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolError';
    this.code = code;
    this.recoverable = options.recoverable ?? ERROR_CODES[code].recoverable;
    this.sideEffect = options.sideEffect ?? false;
    this.data = options.data;
  }
}

/** True when `value` is a code from the catalogue. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
