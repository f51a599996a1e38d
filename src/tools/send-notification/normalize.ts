import { stripInvisible } from '../../approval/policy.ts';
import { ToolError } from '../../protocol/errors.ts';
import { readDefaultMethod, readEmailConfig, readWebhookConfig } from './config.ts';
import { resolveChannel } from './post-webhook.ts';
import { METHODS, type SendNotificationArgs } from './types.ts';

// C0 and C1 controls; a line break or tab is allowed in a body only.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;
// eslint-disable-next-line no-control-regex -- as above, without tab, line feed, carriage return
const BODY_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/gu;
// Characters that join several targets in one value: a list, a display name, whitespace inside.
const SEVERAL = /[,;<>()\s"]/u;

/**
 * The one normal form of `send_notification` arguments, which policy, approval, the preview and
 * the handler all see: `method` filled from config (`default_method`, else `email`); recipient
 * trimmed, Unicode NFC, invisible characters removed, an address's domain lower-cased (the local
 * part too: mail servers treat addresses case-insensitively in practice, and a deny rule must not
 * be dodged by case), a channel name without `#` and lower-cased; subject trimmed, NFC, invisible
 * characters removed; body NFC with control characters other than line breaks and tabs removed.
 * A recipient with a control character, or holding several targets (a list, a display name), is
 * refused: one notification per recipient. So is a method the config does not set up (email
 * without host and from) or a Slack or Discord channel it does not name.
 * @param args the validated arguments.
 * @param config the pack's config.
 * @throws ToolError INVALID_PARAMS saying what to change.
 */
export function normalizeNotification(
  args: SendNotificationArgs,
  config: Readonly<Record<string, unknown>>,
): SendNotificationArgs {
  const method = args.method ?? readDefaultMethod(config);
  if (!METHODS.includes(method)) {
    throw new ToolError(
      'INVALID_PARAMS',
      `unknown method '${String(method)}': use one of ${METHODS.join(', ')}`,
    );
  }
  if (CONTROL.test(args.recipient)) {
    throw new ToolError(
      'INVALID_PARAMS',
      'recipient holds a control character (a line break, a NUL…): write one plain recipient',
    );
  }
  let recipient = stripInvisible(args.recipient.normalize('NFC')).trim();
  if (method === 'email' || method === 'slack' || method === 'discord') {
    if (SEVERAL.test(recipient)) {
      throw new ToolError(
        'INVALID_PARAMS',
        `recipient '${recipient}' names several targets or a display name: write exactly one ${method === 'email' ? 'plain address such as name@example.org' : 'channel name'}, and send one notification per recipient`,
      );
    }
  }
  if (method === 'email') recipient = recipient.toLowerCase();
  if (method === 'slack' || method === 'discord')
    recipient = recipient.replace(/^#+/, '').toLowerCase();
  // A method or channel the config does not have fails here, before a human is asked to approve
  // a call that could only fail.
  if (method === 'slack' || method === 'discord') {
    const service = method === 'slack' ? 'Slack' : 'Discord';
    resolveChannel(service, method, readWebhookConfig(config, method).channels, recipient);
  }
  if (method === 'email') {
    try {
      readEmailConfig(config);
    } catch (error) {
      throw new ToolError('INVALID_PARAMS', (error as Error).message);
    }
  }
  const subject = stripInvisible(args.subject.normalize('NFC')).trim();
  const body = args.body.normalize('NFC').replace(BODY_CONTROL, '');
  return { ...args, method, recipient, subject, body };
}
