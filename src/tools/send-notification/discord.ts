import { ToolError } from '../../protocol/errors.ts';
import { parseRetryAfter } from '../search-web/http-errors.ts';
import type { WebhookConfig } from './config.ts';
import { postWebhook, resolveChannel } from './post-webhook.ts';
import type { Message } from './types.ts';

/** Discord's limit on a message's `content`. */
export const DISCORD_MAX_CONTENT = 2_000;
/** Discord's limits on an embed's title and description. */
export const DISCORD_MAX_EMBED_TITLE = 256;
export const DISCORD_MAX_EMBED_DESCRIPTION = 4_096;

/**
 * The agent's text with Discord's masked links (`[label](url)`) broken: the message is plain text,
 * as on Slack (where `<url|label>` is escaped), so a link shows the address it goes to, never a
 * label of the agent's choosing (`[https://bank.example](https://evil.example)`). A backslash
 * before the parenthesis is Discord's own escape; the URL stays a plain, clickable address.
 * @param text a subject or body.
 */
function breakMaskedLinks(text: string): string {
  return text.replace(/\]\(/g, ']\\(');
}

/**
 * The execute-webhook payload: `content` (subject in bold, then the body) when it fits in 2,000
 * characters, else one embed with the subject as title and the body as description. Mentions are
 * never pinged (`allowed_mentions.parse` is empty), whatever the body says; masked links are
 * shown as text ({@link breakMaskedLinks}).
 * @param message subject and body.
 * @throws ToolError INVALID_PARAMS when the body exceeds even an embed's 4,096 characters.
 */
export function buildDiscordPayload(
  message: Pick<Message, 'subject' | 'body'>,
): Record<string, unknown> {
  const allowed_mentions = { parse: [] };
  const subject = breakMaskedLinks(message.subject);
  const body = breakMaskedLinks(message.body);
  const content = `**${subject}**\n${body}`;
  if (content.length <= DISCORD_MAX_CONTENT) return { content, allowed_mentions };
  if (subject.length <= DISCORD_MAX_EMBED_TITLE && body.length <= DISCORD_MAX_EMBED_DESCRIPTION) {
    return { embeds: [{ title: subject, description: body }], allowed_mentions };
  }
  throw new ToolError(
    'INVALID_PARAMS',
    `the body is ${body.length} characters; a Discord message takes at most ` +
      `${DISCORD_MAX_EMBED_DESCRIPTION}: shorten it, or use email`,
  );
}

/**
 * Post a message to the Discord channel the recipient names, through its webhook (`?wait=true`,
 * so Discord answers with the created message and its id).
 * @param message recipient (a configured channel name), subject and body.
 * @param config `tools.send_notification.discord`.
 * @param signal the call's signal.
 */
export async function sendDiscord(
  message: Message,
  config: WebhookConfig,
  signal: AbortSignal,
): Promise<{ channel: string; messageId: string | null }> {
  const channel = resolveChannel('Discord', 'discord', config.channels, message.recipient);
  const payload = buildDiscordPayload(message);
  const url = new URL(channel.url);
  url.searchParams.set('wait', 'true');
  const target = `Discord channel '${channel.name}'`;
  const response = await postWebhook({
    target,
    url: url.href,
    payload,
    signal,
    timeoutMs: config.timeoutMs,
  });
  const body = readJson(response.text);
  if (response.status >= 200 && response.status < 300) {
    return { channel: channel.name, messageId: typeof body['id'] === 'string' ? body['id'] : null };
  }
  const detail = [
    typeof body['message'] === 'string' ? body['message'] : undefined,
    typeof body['code'] === 'number' && body['code'] !== 0 ? `code ${body['code']}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  const said = `HTTP ${response.status}${detail ? ` ${detail}` : ''}`;
  if (response.status === 429) {
    const seconds =
      typeof body['retry_after'] === 'number'
        ? Math.ceil(body['retry_after'])
        : parseRetryAfter(response.headers.get('retry-after'));
    throw new ToolError(
      'RATE_LIMITED',
      `Discord refused the message for ${target} (${said}); nothing was posted` +
        (seconds === undefined ? '' : `; retry after ${seconds} s`),
      { recoverable: true },
    );
  }
  if (response.status >= 500) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `Discord answered ${said} for ${target}: the message may or may not have been posted. Check the channel before sending it again`,
      { recoverable: false, sideEffect: true },
    );
  }
  const hint =
    response.status === 401 || response.status === 404
      ? ': the webhook URL in the config is wrong or was deleted'
      : '';
  throw new ToolError(
    'EXECUTION_FAILED',
    `Discord refused the message for ${target} (${said})${hint}; nothing was posted`,
    {
      recoverable: false,
    },
  );
}

function readJson(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
