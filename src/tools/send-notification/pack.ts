import { definePack } from '../../protocol/pack.ts';
import { sendNotificationConfigSchema } from './config.ts';
import { sendNotification } from './index.ts';

/** The `notify` pack: `send_notification` by e-mail, Slack, Discord or the outbox (config `tools.notify`). */
export const notifyPack = definePack({
  name: 'notify',
  description:
    'send a notification by e-mail (SMTP), to Slack or Discord channels, or to the outbox',
  tools: [sendNotification as never],
  configSchema: sendNotificationConfigSchema,
  legacyConfigKey: 'send_notification',
});
