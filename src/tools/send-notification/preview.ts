import type { ToolContext } from '../../protocol/types.ts';
import { readDefaultMethod, readOutboxFolder, readWebhookConfig } from './config.ts';
import { webhookHost } from './post-webhook.ts';
import type { SendNotificationArgs } from './types.ts';

/** How much of the body a preview shows. */
export const PREVIEW_BODY_CHARS = 1_200;

/**
 * A readable preview of the message for the approval section: method, where it goes, subject and
 * the start of the body. Webhook URLs are shown by host only (their path is the secret).
 * @param args the call's arguments.
 * @param ctx the tool config and the vault.
 */
export function previewNotification(
  args: SendNotificationArgs,
  ctx: Pick<ToolContext, 'config' | 'vault'>,
): string {
  const method = args.method ?? readDefaultMethod(ctx.config);
  const lines: string[] = [];
  switch (method) {
    case 'email': {
      const email = (ctx.config['email'] ?? {}) as Record<string, unknown>;
      const host = typeof email['host'] === 'string' ? email['host'] : '(not configured)';
      const port = typeof email['port'] === 'number' ? `:${email['port']}` : '';
      lines.push('Send an e-mail', `To: ${args.recipient}`);
      lines.push(`From: ${typeof email['from'] === 'string' ? email['from'] : '(not configured)'}`);
      lines.push(`Via: SMTP ${host}${port}`);
      break;
    }
    case 'slack':
    case 'discord': {
      const service = method === 'slack' ? 'Slack' : 'Discord';
      const channels = readWebhookConfig(ctx.config, method).channels;
      const name = args.recipient.trim().replace(/^#/, '');
      const url = Object.hasOwn(channels, name) ? channels[name] : undefined;
      lines.push(`Post to ${service}`);
      lines.push(
        url === undefined
          ? `Channel: ${name} (unknown: this call will fail; configured: ${Object.keys(channels).join(', ') || 'none'})`
          : `Channel: ${name} (webhook on ${webhookHost(url)})`,
      );
      break;
    }
    case 'outbox':
      lines.push(
        `File in the vault's ${readOutboxFolder(ctx.config)}/ folder (nothing leaves this machine)`,
        `To: ${args.recipient}`,
      );
      break;
  }
  lines.push(`Subject: ${args.subject}`, '');
  const body =
    args.body.length > PREVIEW_BODY_CHARS
      ? `${args.body.slice(0, PREVIEW_BODY_CHARS)}\n… (${args.body.length - PREVIEW_BODY_CHARS} more characters)`
      : args.body;
  lines.push(...body.split('\n').map((line) => `> ${line}`));
  return lines.join('\n');
}
