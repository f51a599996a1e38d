import { ToolError } from '../../protocol/errors.ts';
import type { JsonSchema } from '../../protocol/types.ts';
import { RATE_LIMIT_SCHEMA } from '../search-web/config.ts';
import { METHODS, type NotificationMethod } from './types.ts';

/** Default time an SMTP step or a webhook request may take. */
export const DEFAULT_TIMEOUT_MS = 15_000;
/** Default outbox folder, relative to the vault. */
export const DEFAULT_OUTBOX_FOLDER = 'Outbox';

const channelMap: JsonSchema = {
  type: 'object',
  propertyNames: { pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' },
  additionalProperties: { type: 'string', pattern: '^https?://' },
};

const webhookSection: JsonSchema = {
  type: 'object',
  properties: {
    channels: channelMap,
    timeout_ms: { type: 'integer', minimum: 100, maximum: 600_000 },
  },
  required: ['channels'],
  additionalProperties: false,
};

/** JSON Schema of the `tools.send_notification` config section. */
export const sendNotificationConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    email: {
      type: 'object',
      properties: {
        host: { type: 'string', minLength: 1 },
        port: { type: 'integer', minimum: 1, maximum: 65_535 },
        secure: { type: 'boolean' },
        user: { type: 'string' },
        pass: { type: 'string' },
        from: { type: 'string', minLength: 3 },
        tls_reject_unauthorized: { type: 'boolean' },
        require_tls: { type: 'boolean' },
        timeout_ms: { type: 'integer', minimum: 100, maximum: 600_000 },
      },
      required: ['host', 'from'],
      additionalProperties: false,
    },
    slack: webhookSection,
    discord: webhookSection,
    outbox: {
      type: 'object',
      properties: {
        // Relative to the vault, never absolute or climbing out of it.
        folder: {
          type: 'string',
          minLength: 1,
          pattern: '^(?![/\\\\])(?!.*(^|[/\\\\])\\.\\.([/\\\\]|$)).+$',
        },
      },
      additionalProperties: false,
    },
    default_method: { enum: [...METHODS] },
    // Keys the daemon reads for every tool.
    rate_limit: RATE_LIMIT_SCHEMA,
    enabled: {},
  },
  additionalProperties: false,
};

/** SMTP settings, normalised with defaults. */
export interface EmailConfig {
  readonly host: string;
  /** Defaults to 465 when `secure`, else 587. */
  readonly port: number;
  /** TLS from the first byte (port 465); otherwise STARTTLS is used when the server offers it. */
  readonly secure: boolean;
  readonly user: string | undefined;
  readonly pass: string | undefined;
  readonly from: string;
  /** Defaults to true; false accepts self-signed certificates. */
  readonly tlsRejectUnauthorized: boolean;
  /** Refuse to send without STARTTLS; defaults to false. */
  readonly requireTls: boolean;
  readonly timeoutMs: number;
}

/** One webhook service's settings. */
export interface WebhookConfig {
  /** Channel name → webhook URL. */
  readonly channels: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

/**
 * The method of a call that names none: `tools.send_notification.default_method`, else `email`.
 * @param section the tool's config section.
 */
export function readDefaultMethod(section: Readonly<Record<string, unknown>>): NotificationMethod {
  return METHODS.find((method) => method === section['default_method']) ?? 'email';
}

/**
 * Read `tools.send_notification.email`.
 * @param section the tool's config section.
 * @throws ToolError EXECUTION_FAILED (not recoverable) when host or from is missing.
 */
export function readEmailConfig(section: Readonly<Record<string, unknown>>): EmailConfig {
  const email = objectAt(section, 'email');
  const host = stringAt(email, 'host');
  const from = stringAt(email, 'from');
  if (host === undefined || from === undefined) {
    throw new ToolError(
      'EXECUTION_FAILED',
      'method email is not configured: set tools.send_notification.email.host and .from ' +
        '(and user/pass through ${ENV} variables) in the vaultd config, or use method outbox',
      { recoverable: false },
    );
  }
  const secure = email['secure'] === true;
  const port = typeof email['port'] === 'number' ? email['port'] : secure ? 465 : 587;
  return {
    host,
    port,
    secure,
    user: stringAt(email, 'user'),
    pass: typeof email['pass'] === 'string' ? email['pass'] : undefined,
    from,
    tlsRejectUnauthorized: email['tls_reject_unauthorized'] !== false,
    requireTls: email['require_tls'] === true,
    timeoutMs: timeoutAt(email),
  };
}

/**
 * Read `tools.send_notification.slack` or `.discord`; an absent section has no channels.
 * @param section the tool's config section.
 * @param service which webhook service.
 */
export function readWebhookConfig(
  section: Readonly<Record<string, unknown>>,
  service: 'slack' | 'discord',
): WebhookConfig {
  const webhook = objectAt(section, service);
  const channels: Record<string, string> = {};
  for (const [name, url] of Object.entries(objectAt(webhook, 'channels'))) {
    if (typeof url === 'string' && url !== '') channels[name] = url;
  }
  return { channels, timeoutMs: timeoutAt(webhook) };
}

/**
 * The outbox folder, relative to the vault.
 * @param section the tool's config section; `outbox.folder` defaults to `Outbox`.
 */
export function readOutboxFolder(section: Readonly<Record<string, unknown>>): string {
  return stringAt(objectAt(section, 'outbox'), 'folder') ?? DEFAULT_OUTBOX_FOLDER;
}

function objectAt(
  parent: Readonly<Record<string, unknown>>,
  key: string,
): Readonly<Record<string, unknown>> {
  const value = parent[key];
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function stringAt(parent: Readonly<Record<string, unknown>>, key: string): string | undefined {
  const value = parent[key];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function timeoutAt(parent: Readonly<Record<string, unknown>>): number {
  const value = parent['timeout_ms'];
  return typeof value === 'number' && value > 0 ? value : DEFAULT_TIMEOUT_MS;
}
