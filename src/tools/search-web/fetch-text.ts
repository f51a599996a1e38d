import { ToolError } from '../../protocol/errors.ts';
import { splitCredentials } from '../http/credentials.ts';
import { readCapped } from '../http/read-capped.ts';
import { describeNetworkError } from './http-errors.ts';

/** Bytes of a provider's answer read at most, unless configured otherwise. */
export const DEFAULT_MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/** A provider's answer, whatever its status. */
export interface TextResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly text: string;
}

/** One HTTP request to a provider, for {@link fetchText}. */
export interface FetchTextRequest {
  /** Provider name as a person reads it, for messages. */
  readonly provider: string;
  readonly url: URL;
  readonly init?: RequestInit;
  /** The call's signal: when it aborts, its reason is thrown as is (the executor reports it). */
  readonly signal: AbortSignal;
  /** The provider's own time limit; past it the request is aborted with a TIMEOUT error. */
  readonly timeoutMs: number;
  /** The most bytes of the answer read; a longer one is refused. Default 2 MiB. */
  readonly maxBytes?: number;
}

/**
 * Send a request and read the body as text, under the call's signal, a provider timeout and a byte
 * cap. A URL with user-info (`https://user:pass@host/`) is sent without it, as an `Authorization:
 * Basic` header; messages name the provider's origin only, never the URL's user-info or path.
 * @param request where to send it and within which limits.
 * @returns the status, headers and body, also for 4xx/5xx answers.
 * @throws ToolError EXECUTION_FAILED (recoverable) when the network is unreachable, TIMEOUT when
 *   the provider is slower than `timeoutMs`; the call signal's reason when the call was aborted.
 */
export async function fetchText(request: FetchTextRequest): Promise<TextResponse> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = AbortSignal.any([request.signal, timeout]);
  const { url, authorization } = splitCredentials(request.url);
  const headers = new Headers(request.init?.headers);
  if (authorization !== undefined && !headers.has('authorization'))
    headers.set('authorization', authorization);
  try {
    const response = await fetch(url, { ...request.init, headers, signal, redirect: 'follow' });
    const text = await readCapped(
      response,
      request.maxBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      `${request.provider} at ${url.origin}`,
    );
    return {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
      text,
    };
  } catch (error) {
    if (request.signal.aborted) throw request.signal.reason ?? error;
    if (error instanceof ToolError) throw error;
    const where = `${request.provider} at ${url.origin}`;
    if (timeout.aborted) {
      throw new ToolError(
        'TIMEOUT',
        `${where} did not answer within ${request.timeoutMs} ms; try again later or raise tools.search_web.timeout_ms`,
        { recoverable: true, cause: error },
      );
    }
    throw new ToolError(
      'EXECUTION_FAILED',
      `could not reach ${where} (${describeNetworkError(error)}); check the network and tools.search_web.url`,
      { recoverable: true, cause: error, data: { provider: request.provider } },
    );
  }
}

/**
 * Parse a JSON body, or explain that the provider answered something else.
 * @param provider provider name for the message.
 * @param text the body.
 * @throws ToolError EXECUTION_FAILED (not recoverable) when the body is not JSON.
 */
export function parseJsonBody(provider: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const start = text.slice(0, 80).replace(/\s+/g, ' ');
    throw new ToolError(
      'EXECUTION_FAILED',
      `${provider} answered with a body that is not JSON: "${start}"`,
      {
        recoverable: false,
        cause: error,
      },
    );
  }
}
