import { ToolError } from '../../protocol/errors.ts';
import { parseRetryAfter } from '../search-web/http-errors.ts';
import type { WebhookConfig } from './config.ts';
import { postWebhook, resolveChannel } from './post-webhook.ts';
import type { Message } from './types.ts';

/** Slack truncates longer messages; refuse them instead. */
export const SLACK_MAX_TEXT = 40_000;

const SLACK_ERRORS: Readonly<Record<string, string>> = {
  invalid_payload: 'Slack could not read the payload',
  user_not_found: 'the user does not exist',
  missing_text_or_fallback_or_attachments: 'the message has no text',
  no_text: 'the message has no text',
  action_prohibited: 'the workspace forbids this webhook to post here',
  invalid_token: 'the webhook URL is not valid (revoked token)',
  channel_not_found: 'the channel of this webhook no longer exists',
  no_service: 'the webhook is disabled or was removed: update its URL in the config',
  no_team: 'the workspace of this webhook no longer exists',
  team_disabled: 'the workspace of this webhook is disabled',
  channel_is_archived: 'the channel is archived',
  posting_to_general_channel_denied: 'only admins may post to this channel',
  rollup_error: 'Slack failed internally',
};

/**
 * The `text` of a Slack incoming-webhook message: subject in bold, then the body, with the three
 * characters Slack's mrkdwn reserves (`&`, `<`, `>`) escaped.
 * @param message subject and body.
 */
export function formatSlackText(message: Pick<Message, 'subject' | 'body'>): string {
  const escape = (text: string): string =>
    text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return `*${escape(message.subject)}*\n${escape(message.body)}`;
}

/**
 * Post a message to the Slack channel the recipient names, through its incoming webhook.
 * @param message recipient (a configured channel name), subject and body.
 * @param config `tools.send_notification.slack`.
 * @param signal the call's signal.
 * @returns the channel posted to; Slack's webhooks return no message id.
 */
export async function sendSlack(
  message: Message,
  config: WebhookConfig,
  signal: AbortSignal,
): Promise<{ channel: string }> {
  const channel = resolveChannel('Slack', 'slack', config.channels, message.recipient);
  const text = formatSlackText(message);
  if (text.length > SLACK_MAX_TEXT) {
    throw new ToolError(
      'INVALID_PARAMS',
      `the Slack message is ${text.length} characters; Slack takes at most ${SLACK_MAX_TEXT}: shorten the body`,
    );
  }
  const target = `Slack channel '${channel.name}'`;
  const response = await postWebhook({
    target,
    url: channel.url,
    payload: { text },
    signal,
    timeoutMs: config.timeoutMs,
  });
  if (response.status >= 200 && response.status < 300) return { channel: channel.name };
  const code = response.text.trim().slice(0, 100);
  const meaning = SLACK_ERRORS[code];
  const said = `HTTP ${response.status}${code ? ` ${code}` : ''}${meaning ? `: ${meaning}` : ''}`;
  if (response.status === 429) {
    const retry = parseRetryAfter(response.headers.get('retry-after'));
    throw new ToolError(
      'RATE_LIMITED',
      `Slack refused the message for ${target} (${said}); nothing was posted` +
        (retry === undefined ? '' : `; retry after ${retry} s`),
      { recoverable: true },
    );
  }
  if (response.status >= 500) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `Slack answered ${said} for ${target}: the message may or may not have been posted. Check the channel before sending it again`,
      { recoverable: false, sideEffect: true },
    );
  }
  throw new ToolError(
    'EXECUTION_FAILED',
    `Slack refused the message for ${target} (${said}); nothing was posted`,
    {
      recoverable: false,
    },
  );
}
