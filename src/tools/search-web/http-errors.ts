import { ToolError } from '../../protocol/errors.ts';

const NETWORK_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused: nothing listens there',
  ECONNRESET: 'the connection was reset',
  ENOTFOUND: 'the host name does not resolve (DNS)',
  EAI_AGAIN: 'DNS lookup failed temporarily',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  ETIMEDOUT: 'the connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  UND_ERR_SOCKET: 'the connection broke',
  CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate cannot be verified',
};

/**
 * The system error code behind a failed `fetch` (undici wraps it in `cause`), if any.
 * @param error what `fetch` threw.
 */
export function networkCodeOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'ABORT_ERR') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * A readable reason for a network failure, e.g. `ECONNREFUSED: connection refused: …`.
 * @param error what `fetch` or a socket threw.
 */
export function describeNetworkError(error: unknown): string {
  const code = networkCodeOf(error);
  if (code !== undefined) return `${code}: ${NETWORK_CODES[code] ?? 'network error'}`;
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Seconds to wait, from a `Retry-After` header (delta-seconds or an HTTP date).
 * @param value the header value, or null when absent.
 * @param now the current time in ms since the epoch (for the date form); defaults to `Date.now()`.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed));
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/** Details of a provider's non-2xx answer, for {@link statusError}. */
export interface StatusErrorInput {
  /** Provider name as a person reads it, e.g. `SearXNG`. */
  readonly provider: string;
  readonly status: number;
  readonly statusText: string;
  /** The provider's own explanation, when its error body had one. */
  readonly detail?: string | undefined;
  /** Seconds from `Retry-After` (or the provider's equivalent). */
  readonly retryAfter?: number | undefined;
  /** What the operator or agent should do, appended to the message. */
  readonly hint?: string | undefined;
  /** Override: whether trying again may help (defaults: 429 and 5xx yes, other 4xx no). */
  readonly recoverable?: boolean | undefined;
}

/**
 * Map a provider's HTTP error status to a tool error: 429 → RATE_LIMITED (recoverable),
 * 5xx → EXECUTION_FAILED (recoverable), other 4xx → EXECUTION_FAILED (not recoverable).
 * @param input the status and what the provider said about it.
 */
export function statusError(input: StatusErrorInput): ToolError {
  const statusLine = `HTTP ${input.status}${input.statusText ? ` ${input.statusText}` : ''}`;
  const parts = [`${input.provider} answered ${statusLine}`];
  if (input.detail) parts[0] += `: ${input.detail}`;
  if (input.status === 429) {
    parts.push(
      input.retryAfter === undefined
        ? 'the provider limits how often it may be asked; try again later'
        : `retry after ${input.retryAfter} s`,
    );
  }
  if (input.hint) parts.push(input.hint);
  const message = parts.join('; ');
  const data = {
    provider: input.provider,
    status: input.status,
    retry_after_s: input.retryAfter ?? null,
  };
  if (input.status === 429) {
    return new ToolError('RATE_LIMITED', message, { recoverable: input.recoverable ?? true, data });
  }
  const recoverable = input.recoverable ?? input.status >= 500;
  return new ToolError('EXECUTION_FAILED', message, { recoverable, data });
}
