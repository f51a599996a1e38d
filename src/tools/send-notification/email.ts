import type { NodemailerError } from 'nodemailer/lib/errors';
import { ToolError } from '../../protocol/errors.ts';
import type { EmailConfig } from './config.ts';
import type { Message } from './types.ts';

/** What the SMTP server said when it took the message. */
export interface EmailReceipt {
  /** The Message-ID header the message carries. */
  readonly messageId: string;
  /** The server's final reply, e.g. `250 2.0.0 Ok: queued as 4C1F2`. */
  readonly serverResponse: string;
  /** The queue id in the final reply, when the server names one (`queued as …`). */
  readonly queueId: string | undefined;
  /** A Message-ID the server assigned (Microsoft 365, SES), when it names one. */
  readonly serverMessageId: string | undefined;
  readonly accepted: string[];
}

/**
 * Send one plain-text message over SMTP; one connection per call, closed when done (a pool buys
 * nothing at a rate limit of a few messages an hour, and keeps no socket open at rest).
 * @param message recipient (a validated address), subject and body.
 * @param config the SMTP settings.
 * @param signal aborts the send and closes the connection.
 * @throws ToolError EXECUTION_FAILED: recoverable without side effect when nothing was handed to
 *   the server (connection, TLS, auth, a transient refusal); with `sideEffect` when the connection
 *   broke after the server took the DATA command (the message may have been delivered).
 */
export async function sendEmail(
  message: Message,
  config: EmailConfig,
  signal: AbortSignal,
): Promise<EmailReceipt> {
  const phase = { dataAccepted: false, dataSent: false };
  // Loaded on the first email: a vault that never sends one never pays for it at start-up.
  const { createTransport } = await import('nodemailer');
  const transport = createTransport({
    host: config.host,
    port: config.port,
    secure: config.secure,
    requireTLS: config.requireTls,
    ...(config.user === undefined ? {} : { auth: { user: config.user, pass: config.pass ?? '' } }),
    tls: { rejectUnauthorized: config.tlsRejectUnauthorized },
    connectionTimeout: config.timeoutMs,
    greetingTimeout: config.timeoutMs,
    socketTimeout: config.timeoutMs,
    // The transaction log (commands and replies, never the message or the password) tells us
    // whether the server accepted DATA, i.e. whether a failure may have left a delivered message.
    transactionLog: true,
    logger: phaseWatcher(phase),
  });
  try {
    const info = await transport.sendMail({
      from: config.from,
      to: message.recipient,
      subject: message.subject,
      text: message.body,
      signal,
    });
    return {
      messageId: info.messageId,
      serverResponse: info.response,
      queueId: /queued as ([A-Za-z0-9._-]+)/i.exec(info.response)?.[1],
      serverMessageId: info.serverMessageId,
      accepted: info.accepted.map(String),
    };
  } catch (error) {
    throw smtpError(error as NodemailerError, config, phase.dataAccepted, signal);
  } finally {
    transport.close();
  }
}

/** A bunyan-shaped logger that only watches the SMTP transaction for the DATA step. */
function phaseWatcher(phase: { dataAccepted: boolean; dataSent: boolean }) {
  const watch = (entry: { tnx?: unknown } | undefined, text: unknown): void => {
    if (typeof text !== 'string' || entry === undefined) return;
    if (entry.tnx === 'client' && /^DATA$/i.test(text.trim())) phase.dataSent = true;
    // 354 is the only reply that invites the message itself.
    if (entry.tnx === 'server' && phase.dataSent && /^354\b/.test(text)) phase.dataAccepted = true;
  };
  const ignore = (): void => {};
  return { trace: ignore, debug: watch, info: ignore, warn: ignore, error: ignore, fatal: ignore };
}

function smtpError(
  error: NodemailerError,
  config: EmailConfig,
  dataAccepted: boolean,
  signal: AbortSignal,
): unknown {
  const where = `the SMTP server ${config.host}:${config.port}`;
  const reply = error.response === undefined ? '' : ` (server said: ${error.response.trim()})`;
  if (error.responseCode === undefined && dataAccepted) {
    // No final reply after the message went out: it may or may not have been delivered.
    const reason = signal.aborted
      ? 'the call was aborted'
      : `the connection failed (${error.code ?? error.message})`;
    return new ToolError(
      'EXECUTION_FAILED',
      `${reason} after ${where} accepted the message data, before it confirmed delivery: the message ` +
        'may have been sent. Check the mailbox before sending it again',
      { recoverable: false, sideEffect: true, cause: error },
    );
  }
  if (signal.aborted) return signal.reason ?? error;
  switch (error.code) {
    case 'EAUTH':
    case 'ENOAUTH':
      return new ToolError(
        'EXECUTION_FAILED',
        `${where} refused the login${reply}: check tools.send_notification.email.user and pass`,
        { recoverable: false, cause: error },
      );
    case 'EENVELOPE':
    case 'EMESSAGE': {
      const refused =
        error.command === 'RCPT TO'
          ? 'the recipient'
          : error.command === 'MAIL FROM'
            ? 'the sender'
            : 'the message';
      const permanent = error.permanent !== false && (error.responseCode ?? 500) >= 500;
      return new ToolError(
        'EXECUTION_FAILED',
        `${where} refused ${refused}${reply}` +
          (permanent
            ? '; the message was not sent'
            : '; the refusal is temporary, the message was not sent'),
        { recoverable: !permanent, cause: error },
      );
    }
    case 'ETLS':
      return new ToolError(
        'EXECUTION_FAILED',
        `TLS with ${where} failed (${error.message}); check secure, port and tls_reject_unauthorized`,
        { recoverable: false, cause: error },
      );
    default:
      return new ToolError(
        'EXECUTION_FAILED',
        `could not deliver to ${where} (${[error.code, error.originalCode].filter(Boolean).join('/') || 'error'}: ` +
          `${error.message}); nothing was sent`,
        {
          recoverable: error.responseCode === undefined || error.permanent === false,
          cause: error,
        },
      );
  }
}
