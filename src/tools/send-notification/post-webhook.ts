import { ToolError } from '../../protocol/errors.ts';
import { splitCredentials } from '../http/credentials.ts';
import { readCapped } from '../http/read-capped.ts';
import { describeNetworkError, networkCodeOf } from '../search-web/http-errors.ts';

/** Bytes of a webhook's answer read at most: services answer with a short status. */
const MAX_ANSWER_BYTES = 64 * 1024;

// Failures that happen before a request can reach the server: nothing was posted.
const BEFORE_SENDING = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** A webhook's answer. */
export interface WebhookResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** One webhook post, for {@link postWebhook}. */
export interface WebhookRequest {
  /** Service and channel as a person reads them, e.g. `Slack channel 'alerts'`. */
  readonly target: string;
  readonly url: string;
  readonly payload: unknown;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
}

/**
 * POST a JSON payload to a webhook under the call's signal and a timeout. A URL with user-info is
 * sent without it, as an `Authorization: Basic` header; messages name the channel, never the URL
 * (its path is the webhook's secret). The answer is read up to 64 KiB.
 * @param request where to post what, within which limits.
 * @returns the answer, also for 4xx/5xx.
 * @throws ToolError EXECUTION_FAILED: recoverable without side effect when the host could not be
 *   reached; not recoverable with `sideEffect` when the request may have arrived (a connection
 *   that broke, no answer in time, an aborted call).
 */
export async function postWebhook(request: WebhookRequest): Promise<WebhookResponse> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  let sent = false;
  try {
    const { url, authorization } = splitCredentials(request.url);
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        Accept: 'application/json, text/plain',
        ...(authorization === undefined ? {} : { Authorization: authorization }),
      },
      body: JSON.stringify(request.payload),
      signal: AbortSignal.any([request.signal, timeout]),
      redirect: 'error',
    });
    sent = true;
    const text = await readCapped(
      response,
      MAX_ANSWER_BYTES,
      `the ${request.target} webhook`,
    ).catch(() => '');
    return { status: response.status, headers: response.headers, text };
  } catch (error) {
    if (error instanceof TypeError && !sent && /not a valid URL/.test(error.message)) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `the ${request.target} webhook URL in the config is not a valid URL`,
      );
    }
    const code = networkCodeOf(error);
    if (
      !request.signal.aborted &&
      !timeout.aborted &&
      code !== undefined &&
      BEFORE_SENDING.has(code)
    ) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `could not reach the ${request.target} webhook (${describeNetworkError(error)}); nothing was posted`,
        { recoverable: true, cause: error },
      );
    }
    const why = request.signal.aborted
      ? 'the call was aborted'
      : timeout.aborted
        ? `no answer within ${request.timeoutMs} ms`
        : `the connection failed (${describeNetworkError(error)})`;
    throw new ToolError(
      'EXECUTION_FAILED',
      `${why} while posting to the ${request.target} webhook: the message may or may not have been ` +
        'posted. Check the channel before sending it again',
      { recoverable: false, sideEffect: true, cause: error },
    );
  }
}

/**
 * Find the webhook URL of a channel; the agent names a channel, never a URL.
 * @param service `Slack` or `Discord`, for messages.
 * @param configKey `slack` or `discord`, the config key under `tools.send_notification`.
 * @param channels channel name → webhook URL from config.
 * @param recipient the channel the agent asked for; a leading `#` is ignored.
 * @throws ToolError INVALID_PARAMS listing the configured channels.
 */
export function resolveChannel(
  service: string,
  configKey: string,
  channels: Readonly<Record<string, string>>,
  recipient: string,
): { name: string; url: string } {
  const wanted = recipient.trim().replace(/^#+/, '').toLowerCase();
  // Channel names compare without case, as the services treat them.
  const name = Object.keys(channels).find((key) => key.toLowerCase() === wanted) ?? wanted;
  const url = Object.hasOwn(channels, name) ? channels[name] : undefined;
  if (url !== undefined) return { name, url };
  const known = Object.keys(channels);
  throw new ToolError(
    'INVALID_PARAMS',
    known.length === 0
      ? `no ${service} channels are configured (tools.send_notification.${configKey}.channels); use another method`
      : `unknown ${service} channel '${name}': recipient must be one of ${known.map((k) => `'${k}'`).join(', ')}`,
  );
}

/**
 * The host of a webhook URL, for previews and logs: the path of a webhook URL is its secret.
 * @param url the webhook URL.
 */
export function webhookHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an invalid URL';
  }
}
