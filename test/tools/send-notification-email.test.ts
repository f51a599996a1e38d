import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sendNotification } from '../../src/tools/send-notification/index.ts';
import type {
  SendNotificationArgs,
  SendNotificationOutput,
} from '../../src/tools/send-notification/types.ts';
import { makeContext } from './context.ts';
import { freePort, rejectsWith, waitFor } from './helpers.ts';
import { smtpReply, startSmtp, type TestSmtp } from './smtp-server.ts';

let smtp: TestSmtp | undefined;
afterEach(async () => {
  await smtp?.close();
  smtp = undefined;
});

const emailConfig = (port: number, extra: Record<string, unknown> = {}) => ({
  email: {
    host: '127.0.0.1',
    port,
    secure: false,
    from: 'vaultd@example.org',
    timeout_ms: 5_000,
    ...extra,
  },
});

const args = (extra: Partial<SendNotificationArgs> = {}): SendNotificationArgs => ({
  recipient: 'alice@example.com',
  subject: 'Weekly report — ready',
  body: 'Hello Alice,\n\nthe report is in the vault.\n',
  method: 'email',
  ...extra,
});

function send(
  a: SendNotificationArgs,
  config: Record<string, unknown>,
): Promise<SendNotificationOutput> {
  const { ctx } = makeContext(config);
  return sendNotification.handler(a, ctx) as Promise<SendNotificationOutput>;
}

describe('send_notification by e-mail', () => {
  test('delivers to a real SMTP server with recipient, subject, body and from; returns the ids', async () => {
    smtp = await startSmtp();
    const out = await send(args(), emailConfig(smtp.port));
    assert.equal(smtp.received.length, 1);
    const mail = smtp.received[0];
    assert.equal(mail?.from, 'vaultd@example.org');
    assert.deepEqual(mail?.to, ['alice@example.com']);
    assert.match(mail?.raw ?? '', /^From: vaultd@example\.org\r$/m);
    assert.match(mail?.raw ?? '', /^To: alice@example\.com\r$/m);
    // The em dash makes nodemailer encode the subject as an RFC 2047 word.
    assert.match(mail?.raw ?? '', /^Subject: =\?UTF-8\?/m);
    assert.match(mail?.raw ?? '', /the report is in the vault\./);
    const header = /^Message-ID: (<[^>]+>)\r$/m.exec(mail?.raw ?? '')?.[1];
    assert.equal(out.success, true);
    assert.equal(out.delivered, true);
    assert.equal(out.message_id, header);
    assert.equal(out['server_response'], '250 Ok: queued as 4C1F2A9');
    assert.equal(out['queue_id'], '4C1F2A9');
  });

  test('logs in with user and pass when the server requires auth', async () => {
    smtp = await startSmtp({
      authOptional: false,
      authMethods: ['PLAIN', 'LOGIN'],
      onAuth(auth, _session, callback) {
        if (auth.username === 'robot' && auth.password === 's3cret')
          callback(null, { user: 'robot' });
        else callback(smtpReply(535, 'Authentication credentials invalid'));
      },
    });
    await send(args(), emailConfig(smtp.port, { user: 'robot', pass: 's3cret' }));
    assert.equal(smtp.received[0]?.user, 'robot');

    const error = await rejectsWith(
      send(args(), emailConfig(smtp.port, { user: 'robot', pass: 'wrong' })),
      'EXECUTION_FAILED',
    );
    assert.equal(error.recoverable, false);
    assert.equal(error.sideEffect, false);
    assert.match(error.message, /refused the login/);
    assert.doesNotMatch(error.message, /wrong/);
    assert.equal(smtp.received.length, 1);
  });

  test('a permanently refused recipient (550) is not recoverable and sent nothing', async () => {
    smtp = await startSmtp({
      onRcptTo(_address, _session, callback) {
        callback(smtpReply(550, 'No such user here'));
      },
    });
    const error = await rejectsWith(send(args(), emailConfig(smtp.port)), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, false);
    assert.equal(error.sideEffect, false);
    assert.match(error.message, /refused the recipient/);
    assert.match(error.message, /550 No such user here/);
    assert.equal(smtp.received.length, 0);
  });

  test('a temporary refusal (450) is recoverable without side effect', async () => {
    smtp = await startSmtp({
      onRcptTo(_address, _session, callback) {
        callback(smtpReply(450, 'Mailbox busy, try later'));
      },
    });
    const error = await rejectsWith(send(args(), emailConfig(smtp.port)), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, true);
    assert.equal(error.sideEffect, false);
  });

  test('a refused message after DATA (554) is not recoverable and not a side effect', async () => {
    smtp = await startSmtp({
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () => callback(smtpReply(554, 'Message rejected as spam')));
      },
    });
    const error = await rejectsWith(send(args(), emailConfig(smtp.port)), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, false);
    assert.equal(error.sideEffect, false);
    assert.match(error.message, /554 Message rejected as spam/);
  });

  test('no server listening is a recoverable failure before anything was sent', async () => {
    const port = await freePort();
    const error = await rejectsWith(send(args(), emailConfig(port)), 'EXECUTION_FAILED');
    assert.equal(error.recoverable, true);
    assert.equal(error.sideEffect, false);
    assert.match(error.message, /ECONNREFUSED/);
    assert.match(error.message, /nothing was sent/);
  });

  test('aborting after the server took the message data is a side effect, never retried', async () => {
    let dataSeen = false;
    smtp = await startSmtp({
      onData(stream) {
        stream.resume();
        stream.on('end', () => {
          dataSeen = true; // never answers: the client is left waiting for the final reply
        });
      },
    });
    const { ctx, controller } = makeContext(emailConfig(smtp.port));
    const pending = sendNotification.handler(args(), ctx) as Promise<unknown>;
    await waitFor(() => dataSeen);
    controller.abort(new Error('call timed out'));
    const error = await rejectsWith(pending, 'EXECUTION_FAILED');
    assert.equal(error.sideEffect, true);
    assert.equal(error.recoverable, false);
    assert.match(error.message, /may have been sent/);
  });

  test('aborting before connecting throws the signal reason', async () => {
    smtp = await startSmtp();
    const { ctx, controller } = makeContext(emailConfig(smtp.port));
    const reason = new Error('shutdown');
    controller.abort(reason);
    await assert.rejects(
      sendNotification.handler(args(), ctx) as Promise<unknown>,
      (e) => e === reason,
    );
    assert.equal(smtp.received.length, 0);
  });

  test('a recipient that is not one plain address is INVALID_PARAMS', async () => {
    for (const recipient of [
      'alice',
      'Alice <alice@example.com>',
      'a@b.com, c@d.com',
      'a@localhost',
      'a..b@example.com',
      'a@-x.com',
    ]) {
      const error = await rejectsWith(send(args({ recipient }), emailConfig(1)), 'INVALID_PARAMS');
      assert.match(error.message, /not an e-mail address/, recipient);
    }
  });

  test('missing SMTP config says what to set', async () => {
    const error = await rejectsWith(send(args(), {}), 'EXECUTION_FAILED');
    assert.match(error.message, /tools\.send_notification\.email\.host/);
  });
});
