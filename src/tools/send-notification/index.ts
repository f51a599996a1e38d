import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { ToolContext, ToolDefinition } from '../../protocol/types.ts';
import {
  readDefaultMethod,
  readEmailConfig,
  readOutboxFolder,
  readWebhookConfig,
  sendNotificationConfigSchema,
} from './config.ts';
import { sendDiscord } from './discord.ts';
import { sendEmail } from './email.ts';
import { checkMessage, isEmailAddress, MAX_BODY, MAX_RECIPIENT, MAX_SUBJECT } from './limits.ts';
import { writeOutboxNote } from './outbox.ts';
import { normalizeNotification } from './normalize.ts';
import { previewNotification } from './preview.ts';
import { sendSlack } from './slack.ts';
import { METHODS, type SendNotificationArgs, type SendNotificationOutput } from './types.ts';

/** Default rate limit: 20 notifications an hour (config `tools.send_notification.rate_limit` overrides). */
export const DEFAULT_RATE_LIMIT = { max: 20, windowMs: 3_600_000 } as const;

/**
 * Send (or file) one notification by the chosen method.
 * @param args recipient, subject, body and method (default: config `default_method`, else `email`).
 * @param ctx the call context: signal, vault and the `tools.send_notification` config.
 */
export async function runSendNotification(
  args: SendNotificationArgs,
  ctx: ToolContext,
): Promise<SendNotificationOutput> {
  const method = args.method ?? readDefaultMethod(ctx.config);
  if (!METHODS.includes(method)) {
    throw new ToolError(
      'INVALID_PARAMS',
      `unknown method '${String(method)}': use one of ${METHODS.join(', ')}`,
    );
  }
  const message = checkMessage(args);
  switch (method) {
    case 'email': {
      if (!isEmailAddress(message.recipient)) {
        throw new ToolError(
          'INVALID_PARAMS',
          `recipient '${message.recipient}' is not an e-mail address: write one plain address such as name@example.org`,
        );
      }
      const receipt = await sendEmail(message, readEmailConfig(ctx.config), ctx.signal);
      return {
        success: true,
        message_id: receipt.messageId,
        method,
        delivered: true,
        server_response: receipt.serverResponse,
        ...(receipt.queueId === undefined ? {} : { queue_id: receipt.queueId }),
        ...(receipt.serverMessageId === undefined
          ? {}
          : { server_message_id: receipt.serverMessageId }),
        accepted: receipt.accepted,
      };
    }
    case 'slack': {
      const sent = await sendSlack(message, readWebhookConfig(ctx.config, 'slack'), ctx.signal);
      return { success: true, message_id: null, method, delivered: true, channel: sent.channel };
    }
    case 'discord': {
      const sent = await sendDiscord(message, readWebhookConfig(ctx.config, 'discord'), ctx.signal);
      return {
        success: true,
        message_id: sent.messageId,
        method,
        delivered: true,
        channel: sent.channel,
      };
    }
    case 'outbox': {
      if (ctx.vault === undefined) {
        throw new ToolError(
          'EXECUTION_FAILED',
          'method outbox needs a vault, and this call has none; use another method',
        );
      }
      const filed = await writeOutboxNote(ctx.vault, readOutboxFolder(ctx.config), message, {
        callId: ctx.callId,
        note: ctx.note,
        now: new Date(),
      });
      return {
        success: true,
        message_id: filed.fileName,
        method,
        delivered: false,
        path: filed.path,
        note: `Nothing left this machine: the message was filed in the vault as ${filed.path} for a person to send.`,
      };
    }
  }
}

/** The declaration of `send_notification` (SPEC section 8). */
export const sendNotificationDefinition: ToolDefinition<SendNotificationArgs> = {
  name: 'send_notification',
  description:
    'Send a message to a person: by e-mail (recipient is an address), to a Slack or Discord channel ' +
    '(recipient is a channel name configured by the operator), or file it in the vault outbox ' +
    '(method outbox: nothing is sent). A human approves every call first. Returns {success, message_id}.',
  parameters: {
    recipient: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_RECIPIENT,
      description: 'E-mail address for method email; channel name for slack or discord.',
    },
    subject: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_SUBJECT,
      pattern: '^[^\\r\\n]*$',
      description: `One line, at most ${MAX_SUBJECT} characters.`,
    },
    body: {
      type: 'string',
      maxLength: MAX_BODY,
      description: `Plain text, at most ${MAX_BODY} characters.`,
    },
    method: {
      type: 'string',
      enum: [...METHODS],
      description:
        'email, slack, discord or outbox; when left out, the method the operator configured ' +
        '(tools.send_notification.default_method), else email.',
    },
  },
  required: ['recipient', 'subject', 'body'],
  safety: 'dangerous',
  categories: ['communication', 'notification'],
  readOnly: false,
  idempotent: false,
  rateLimit: DEFAULT_RATE_LIMIT,
  outputSchema: {
    type: 'object',
    properties: {
      success: { type: 'boolean' },
      message_id: { type: ['string', 'null'] },
      method: { enum: [...METHODS] },
      delivered: { type: 'boolean' },
    },
    required: ['success', 'message_id'],
  },
  configSchema: sendNotificationConfigSchema,
  normalize: normalizeNotification,
  preview: previewNotification,
  handler: runSendNotification,
};

/** The `send_notification` tool, ready to register. */
export const sendNotification = defineTool(sendNotificationDefinition);
