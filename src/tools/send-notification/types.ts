/** Ways `send_notification` can deliver a message. */
export type NotificationMethod = 'email' | 'slack' | 'discord' | 'outbox';

/** The delivery methods, in documentation order. */
export const METHODS: readonly NotificationMethod[] = ['email', 'slack', 'discord', 'outbox'];

/** Arguments of `send_notification`. */
export interface SendNotificationArgs {
  /** An e-mail address for `email`; a configured channel name for `slack` / `discord`; free text for `outbox`. */
  readonly recipient: string;
  readonly subject: string;
  readonly body: string;
  /** Defaults to config `tools.send_notification.default_method`, else `email`. */
  readonly method?: NotificationMethod;
}

/** What `send_notification` returns as structured data. */
export interface SendNotificationOutput {
  readonly success: true;
  /** Message-ID header (email), Discord message id, outbox file name; null when the service gives none (Slack). */
  readonly message_id: string | null;
  readonly method: NotificationMethod;
  /** False only for `outbox`: nothing left the machine. */
  readonly delivered: boolean;
  readonly [key: string]: unknown;
}

/** The message to send, validated. */
export interface Message {
  readonly recipient: string;
  readonly subject: string;
  readonly body: string;
}
