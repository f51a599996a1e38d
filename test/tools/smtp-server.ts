import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';

/** A message the test SMTP server received. */
export interface ReceivedMail {
  readonly from: string;
  readonly to: string[];
  readonly raw: string;
  readonly user: string | undefined;
}

/** A real SMTP server on 127.0.0.1 (no STARTTLS) that keeps what it receives. */
export interface TestSmtp {
  readonly port: number;
  readonly received: ReceivedMail[];
  close(): Promise<void>;
}

/**
 * Start `smtp-server` on 127.0.0.1, port 0; STARTTLS is disabled so the test needs no certificate.
 * @param options extra server options (onAuth, onRcptTo, onData overrides …).
 * @param reply the text of the final 250 reply; defaults to a Postfix-like `queued as` reply.
 */
export async function startSmtp(
  options: Partial<SMTPServerOptions> = {},
  reply = 'Ok: queued as 4C1F2A9',
): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const from = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address;
        received.push({
          from,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          user: session.user === undefined ? undefined : String(session.user),
        });
        callback(null, reply);
      });
    },
    ...options,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * An SMTP error with a reply code, as smtp-server expects from its callbacks.
 * @param code reply code, e.g. 550.
 * @param message reply text.
 */
export function smtpReply(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}
