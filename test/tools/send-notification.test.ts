import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { noAccess } from '../../src/vault/access.ts';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { sharedAjv } from '../../src/protocol/ajv.ts';
import { sendNotification } from '../../src/tools/send-notification/index.ts';
import { slugify, sourceLink, writeOutboxNote } from '../../src/tools/send-notification/outbox.ts';
import type {
  SendNotificationArgs,
  SendNotificationOutput,
} from '../../src/tools/send-notification/types.ts';
import { makeContext } from './context.ts';
import { freePort, rejectsWith } from './helpers.ts';
import { sendJson, startServer, type TestServer } from './http-server.ts';

let hooks: TestServer;
let vault: string;
before(async () => {
  hooks = await startServer();
});
afterEach(async () => {
  hooks.requests.length = 0;
  if (vault) await rm(vault, { recursive: true, force: true });
});
after(() => hooks.close());

const config = () => ({
  slack: {
    channels: {
      alerts: `${hooks.origin}/services/T000/B000/XXXX`,
      team: `${hooks.origin}/services/T000/B111/YYYY`,
    },
  },
  discord: { channels: { ops: `${hooks.origin}/api/webhooks/123/tok-en` } },
});

function send(
  a: SendNotificationArgs,
  cfg: Record<string, unknown> = config(),
  dir?: string,
): Promise<SendNotificationOutput> {
  const { ctx } = makeContext(cfg, dir);
  return sendNotification.handler(a, ctx) as Promise<SendNotificationOutput>;
}

describe('send_notification declaration', () => {
  test('is dangerous, not read-only, not idempotent, rate limited to 20 an hour', () => {
    assert.equal(sendNotification.safety, 'dangerous');
    assert.equal(sendNotification.readOnly, false);
    assert.equal(sendNotification.idempotent, false);
    assert.deepEqual(sendNotification.rateLimit, { max: 20, windowMs: 3_600_000 });
    assert.deepEqual(sendNotification.required, ['recipient', 'subject', 'body']);
  });

  test('the argument schema enforces the limits and leaves the method to the config default', () => {
    const validate = sharedAjv().compile(sendNotification.inputSchema);
    const ok: Record<string, unknown> = { recipient: 'a@example.com', subject: 's', body: 'b' };
    assert.equal(validate(ok), true);
    assert.equal(ok['method'], undefined);
    assert.equal(validate({ ...ok, subject: 'x'.repeat(201) }), false);
    assert.equal(validate({ ...ok, subject: 'two\nlines' }), false);
    assert.equal(validate({ ...ok, body: 'x'.repeat(50_001) }), false);
    assert.equal(validate({ ...ok, body: 'x'.repeat(50_000) }), true);
    assert.equal(validate({ ...ok, method: 'sms' }), false);
  });

  test('the config schema accepts the documented shape and rejects mistakes', () => {
    const validate = sharedAjv().compile(sendNotification.configSchema ?? {});
    const good = {
      email: {
        host: 'smtp.example.org',
        port: 587,
        secure: false,
        user: 'u',
        pass: 'p',
        from: 'vaultd@example.org',
      },
      slack: { channels: { alerts: 'https://hooks.slack.com/services/T/B/X' } },
      discord: { channels: { ops: 'https://discord.com/api/webhooks/1/t' } },
      outbox: { folder: 'Outbox' },
      default_method: 'outbox',
      rate_limit: { max: 5, window_ms: 3_600_000 },
    };
    assert.equal(validate(good), true, sharedAjv().errorsText(validate.errors));
    assert.equal(validate({ email: { host: 'smtp.example.org' } }), false, 'from is required');
    assert.equal(validate({ slack: { channels: { alerts: 'ftp://x' } } }), false);
    assert.equal(validate({ outbox: { folder: '../outside' } }), false);
    assert.equal(validate({ outbox: { folder: '/etc' } }), false);
    assert.equal(validate({ emial: {} }), false, 'a misspelt key is reported');
    assert.equal(validate({ rate_limit: { max: 5 } }), false, 'rate_limit needs window_ms');
    assert.equal(validate({ default_method: 'sms' }), false);
  });
});

describe('size and shape limits', () => {
  test('subject and body limits give INVALID_PARAMS saying how much to cut', async () => {
    const base = { recipient: 'alerts', method: 'slack' as const };
    let error = await rejectsWith(
      send({ ...base, subject: 'x'.repeat(201), body: 'b' }),
      'INVALID_PARAMS',
    );
    assert.match(error.message, /201 characters; shorten it to at most 200/);
    error = await rejectsWith(
      send({ ...base, subject: 's', body: 'x'.repeat(50_001) }),
      'INVALID_PARAMS',
    );
    assert.match(error.message, /at most 50000/);
    error = await rejectsWith(
      send({ ...base, subject: 'a\r\nBcc: x@example.com', body: 'b' }),
      'INVALID_PARAMS',
    );
    assert.match(error.message, /single line/);
    await rejectsWith(send({ ...base, subject: '   ', body: 'b' }), 'INVALID_PARAMS');
    assert.equal(hooks.requests.length, 0);
  });
});

describe('Slack', () => {
  test('posts {text} with the subject in bold and mrkdwn characters escaped', async () => {
    hooks.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('ok');
    });
    const out = await send({
      recipient: '#alerts',
      subject: 'Build <main> failed',
      body: 'A & B > C',
      method: 'slack',
    });
    assert.deepEqual(out, {
      success: true,
      message_id: null,
      method: 'slack',
      delivered: true,
      channel: 'alerts',
    });
    const seen = hooks.requests[0];
    assert.equal(seen?.method, 'POST');
    assert.equal(seen?.url.pathname, '/services/T000/B000/XXXX');
    assert.match(String(seen?.headers['content-type']), /^application\/json/);
    assert.deepEqual(JSON.parse(seen?.body ?? ''), {
      text: '*Build &lt;main&gt; failed*\nA &amp; B &gt; C',
    });
  });

  test('an unknown channel is INVALID_PARAMS listing the known ones, and nothing is posted', async () => {
    const error = await rejectsWith(
      send({ recipient: 'random', subject: 's', body: 'b', method: 'slack' }),
      'INVALID_PARAMS',
    );
    assert.match(error.message, /unknown Slack channel 'random'/);
    assert.match(error.message, /'alerts', 'team'/);
    assert.equal(hooks.requests.length, 0);
  });

  test('an agent cannot name a URL as the recipient', async () => {
    await rejectsWith(
      send({ recipient: `${hooks.origin}/evil`, subject: 's', body: 'b', method: 'slack' }),
      'INVALID_PARAMS',
    );
    await rejectsWith(
      send({ recipient: 'hasOwnProperty', subject: 's', body: 'b', method: 'slack' }),
      'INVALID_PARAMS',
    );
    assert.equal(hooks.requests.length, 0);
  });

  test('404 no_service is not recoverable and explains the webhook is gone', async () => {
    hooks.handle((_req, res) => {
      res.writeHead(404, { 'Content-Type': 'text/html' });
      res.end('no_service');
    });
    const error = await rejectsWith(
      send({ recipient: 'alerts', subject: 's', body: 'b', method: 'slack' }),
      'EXECUTION_FAILED',
    );
    assert.equal(error.recoverable, false);
    assert.equal(error.sideEffect, false);
    assert.match(error.message, /HTTP 404 no_service: the webhook is disabled or was removed/);
  });

  test("400 invalid_payload is reported with Slack's code", async () => {
    hooks.handle((_req, res) => {
      res.writeHead(400);
      res.end('invalid_payload');
    });
    const error = await rejectsWith(
      send({ recipient: 'alerts', subject: 's', body: 'b', method: 'slack' }),
      'EXECUTION_FAILED',
    );
    assert.match(error.message, /HTTP 400 invalid_payload/);
  });

  test('429 is RATE_LIMITED, recoverable, with the Retry-After delay', async () => {
    hooks.handle((_req, res) => {
      res.writeHead(429, { 'Retry-After': '30' });
      res.end('rate_limited');
    });
    const error = await rejectsWith(
      send({ recipient: 'alerts', subject: 's', body: 'b', method: 'slack' }),
      'RATE_LIMITED',
    );
    assert.equal(error.recoverable, true);
    assert.match(error.message, /retry after 30 s/);
  });

  test('500 may have posted: side effect, not recoverable', async () => {
    hooks.handle((_req, res) => {
      res.writeHead(500);
      res.end('rollup_error');
    });
    const error = await rejectsWith(
      send({ recipient: 'alerts', subject: 's', body: 'b', method: 'slack' }),
      'EXECUTION_FAILED',
    );
    assert.equal(error.sideEffect, true);
    assert.equal(error.recoverable, false);
  });

  test('a webhook host that refuses connections is recoverable: nothing was posted', async () => {
    const cfg = {
      slack: { channels: { alerts: `http://127.0.0.1:${await freePort()}/services/x` } },
    };
    const error = await rejectsWith(
      send({ recipient: 'alerts', subject: 's', body: 'b', method: 'slack' }, cfg),
      'EXECUTION_FAILED',
    );
    assert.equal(error.recoverable, true);
    assert.equal(error.sideEffect, false);
    assert.match(error.message, /ECONNREFUSED/);
  });

  test('a webhook that takes the request but never answers is a side effect after the timeout', async () => {
    hooks.handle(() => {
      // holds the request open
    });
    const cfg = { slack: { channels: { alerts: `${hooks.origin}/slow` }, timeout_ms: 150 } };
    const error = await rejectsWith(
      send({ recipient: 'alerts', subject: 's', body: 'b', method: 'slack' }, cfg),
      'EXECUTION_FAILED',
    );
    assert.equal(error.sideEffect, true);
    assert.match(error.message, /no answer within 150 ms/);
  });
});

describe('Discord', () => {
  const message = (id: string, content: string) => ({
    id,
    type: 0,
    content,
    channel_id: '999',
    author: { bot: true, id: '123', username: 'vaultd' },
    embeds: [],
    mentions: [],
    timestamp: '2026-11-21T10:00:00.000000+00:00',
    webhook_id: '123',
  });

  test("posts {content, allowed_mentions} with ?wait=true and returns Discord's message id", async () => {
    hooks.handle((req, res) => {
      const body = JSON.parse(req.body) as { content: string };
      sendJson(res, 200, message('1180000000000000001', body.content));
    });
    const out = await send({
      recipient: 'ops',
      subject: 'Deploy done',
      body: '@everyone v2 is live',
      method: 'discord',
    });
    assert.equal(out.message_id, '1180000000000000001');
    const seen = hooks.requests[0];
    assert.equal(seen?.url.pathname, '/api/webhooks/123/tok-en');
    assert.equal(seen?.url.searchParams.get('wait'), 'true');
    assert.deepEqual(JSON.parse(seen?.body ?? ''), {
      content: '**Deploy done**\n@everyone v2 is live',
      allowed_mentions: { parse: [] },
    });
  });

  test("a masked link in the agent's text is posted as text: the address shows, not a chosen label", async () => {
    hooks.handle((_req, res) => sendJson(res, 200, message('3', '')));
    const phish = '[https://bank.example/login](https://evil.example/phish)';
    await send({
      recipient: 'ops',
      subject: `Pay ${phish}`,
      body: `Log in: ${phish}`,
      method: 'discord',
    });
    await send({
      recipient: 'ops',
      subject: 'Long',
      body: `${'y'.repeat(2_500)} ${phish}`,
      method: 'discord',
    });
    const [short, long] = hooks.requests.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    assert.equal(
      short?.['content'],
      '**Pay [https://bank.example/login]\\(https://evil.example/phish)**\nLog in: [https://bank.example/login]\\(https://evil.example/phish)',
    );
    const embed = (long?.['embeds'] as { description: string }[] | undefined)?.[0];
    assert.ok(embed?.description.endsWith(']\\(https://evil.example/phish)'));
    assert.doesNotMatch(JSON.stringify([short, long]), /\]\(/);
  });

  test('a message over 2,000 characters goes as an embed; over 4,096 is INVALID_PARAMS', async () => {
    hooks.handle((_req, res) => sendJson(res, 200, message('2', '')));
    const body = 'y'.repeat(3_000);
    await send({ recipient: 'ops', subject: 'Long', body, method: 'discord' });
    assert.deepEqual(JSON.parse(hooks.requests[0]?.body ?? ''), {
      embeds: [{ title: 'Long', description: body }],
      allowed_mentions: { parse: [] },
    });
    const error = await rejectsWith(
      send({ recipient: 'ops', subject: 'Long', body: 'z'.repeat(4_097), method: 'discord' }),
      'INVALID_PARAMS',
    );
    assert.match(error.message, /at most 4096/);
    assert.equal(hooks.requests.length, 1);
  });

  test('429 with retry_after is RATE_LIMITED naming the delay', async () => {
    hooks.handle((_req, res) =>
      sendJson(
        res,
        429,
        { message: 'You are being rate limited.', retry_after: 1.337, global: false },
        { 'Retry-After': '2' },
      ),
    );
    const error = await rejectsWith(
      send({ recipient: 'ops', subject: 's', body: 'b', method: 'discord' }),
      'RATE_LIMITED',
    );
    assert.equal(error.recoverable, true);
    assert.match(error.message, /You are being rate limited\./);
    assert.match(error.message, /retry after 2 s/);
  });

  test('404 Unknown Webhook says the configured URL is wrong', async () => {
    hooks.handle((_req, res) => sendJson(res, 404, { message: 'Unknown Webhook', code: 10015 }));
    const error = await rejectsWith(
      send({ recipient: 'ops', subject: 's', body: 'b', method: 'discord' }),
      'EXECUTION_FAILED',
    );
    assert.equal(error.recoverable, false);
    assert.match(error.message, /Unknown Webhook, code 10015/);
    assert.match(error.message, /webhook URL in the config/);
  });

  test('400 Invalid Form Body is reported', async () => {
    hooks.handle((_req, res) =>
      sendJson(res, 400, {
        code: 50035,
        errors: {
          content: {
            _errors: [
              { code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' },
            ],
          },
        },
        message: 'Invalid Form Body',
      }),
    );
    const error = await rejectsWith(
      send({ recipient: 'ops', subject: 's', body: 'b', method: 'discord' }),
      'EXECUTION_FAILED',
    );
    assert.match(error.message, /Invalid Form Body, code 50035/);
  });

  test('no Discord channels configured says so', async () => {
    const error = await rejectsWith(
      send({ recipient: 'ops', subject: 's', body: 'b', method: 'discord' }, {}),
      'INVALID_PARAMS',
    );
    assert.match(error.message, /no Discord channels are configured/);
  });
});

describe('outbox', () => {
  test('files a markdown note in <vault>/Outbox and says nothing left the machine', async () => {
    vault = await mkdtemp(join(tmpdir(), 'vaultd-outbox-'));
    const out = await send(
      {
        recipient: 'bob@example.com',
        subject: 'Café: plans for Q3!',
        body: 'Line one\n\nLine two',
        method: 'outbox',
      },
      {},
      vault,
    );
    assert.equal(out.success, true);
    assert.equal(out.delivered, false);
    assert.match(
      String(out.message_id),
      /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-cafe-plans-for-q3\.md$/,
    );
    assert.equal(out['path'], `Outbox/${out.message_id}`);
    assert.match(String(out['note']), /Nothing left this machine/);
    const files = await readdir(join(vault, 'Outbox'));
    assert.deepEqual(files, [out.message_id], 'no temp file is left behind');
    const text = await readFile(join(vault, 'Outbox', String(out.message_id)), 'utf8');
    const [, front, rest] = /^---\n([\s\S]*?)---\n([\s\S]*)$/.exec(text) ?? [];
    const meta = parse(front ?? '') as Record<string, unknown>;
    assert.equal(meta['recipient'], 'bob@example.com');
    assert.equal(meta['subject'], 'Café: plans for Q3!');
    assert.equal(meta['delivered'], false);
    assert.equal(meta['call_id'], 'call_test');
    assert.equal(meta['source_note'], '[[test]]', 'a link that survives the note moving on');
    assert.ok(!Number.isNaN(Date.parse(String(meta['created']))));
    assert.equal(rest, '\n# Café: plans for Q3!\n\nLine one\n\nLine two\n');
  });

  test('the same subject at the same instant never overwrites: numbered names', async () => {
    vault = await mkdtemp(join(tmpdir(), 'vaultd-outbox-'));
    const meta = { callId: 'c', note: undefined, now: new Date('2026-11-21T10:00:00.000Z') };
    const message = { recipient: 'x', subject: 'Same', body: 'b' };
    const names = await Promise.all(
      [1, 2, 3].map(() => writeOutboxNote(vault, 'Mail/Out', message, meta)),
    );
    assert.deepEqual(names.map((n) => n.fileName).sort(), [
      '2026-11-21T10-00-00-000Z-same-2.md',
      '2026-11-21T10-00-00-000Z-same-3.md',
      '2026-11-21T10-00-00-000Z-same.md',
    ]);
    assert.equal((await readdir(join(vault, 'Mail/Out'))).length, 3);
  });

  test('uses the configured folder and refuses one outside the vault', async () => {
    vault = await mkdtemp(join(tmpdir(), 'vaultd-outbox-'));
    const out = await send(
      { recipient: 'x', subject: 's', body: 'b', method: 'outbox' },
      { outbox: { folder: 'Drafts/Mail' } },
      vault,
    );
    assert.equal(out['path'], `Drafts/Mail/${out.message_id}`);
    await rejectsWith(
      send(
        { recipient: 'x', subject: 's', body: 'b', method: 'outbox' },
        { outbox: { folder: '../escape' } },
        vault,
      ),
      'EXECUTION_FAILED',
    );
  });

  test('files nothing through an Outbox/ (or a folder above it) an agent replaced with a link', async () => {
    // Red-team finding F4b: the message was written into the folder the link pointed to.
    vault = await mkdtemp(join(tmpdir(), 'vaultd-outbox-'));
    const outside = join(vault, '..', `${basename(vault)}-outside`);
    await mkdir(outside);
    try {
      await symlink(outside, join(vault, 'Outbox'));
      const error = await rejectsWith(
        send({ recipient: 'x', subject: 's', body: 'b', method: 'outbox' }, {}, vault),
        'EXECUTION_FAILED',
      );
      assert.match(error.message, /Outbox is a symbolic link/);
      await symlink(outside, join(vault, 'Drafts'));
      await rejectsWith(
        send(
          { recipient: 'x', subject: 's', body: 'b', method: 'outbox' },
          { outbox: { folder: 'Drafts/Mail' } },
          vault,
        ),
        'EXECUTION_FAILED',
      );
      assert.deepEqual(await readdir(outside), []);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  test('a call without a method uses default_method from the config', async () => {
    vault = await mkdtemp(join(tmpdir(), 'vaultd-outbox-'));
    const out = await send(
      { recipient: 'x', subject: 'Default', body: 'b' },
      { default_method: 'outbox' },
      vault,
    );
    assert.equal(out.method, 'outbox');
    assert.equal(out.delivered, false);
    assert.deepEqual(await readdir(join(vault, 'Outbox')), [out.message_id]);
  });

  test('without a vault the outbox is an error, not a crash', async () => {
    const error = await rejectsWith(
      send({ recipient: 'x', subject: 's', body: 'b', method: 'outbox' }, {}),
      'EXECUTION_FAILED',
    );
    assert.match(error.message, /needs a vault/);
  });

  test('slugify keeps ASCII letters and digits', () => {
    assert.equal(slugify('Hello, World!'), 'hello-world');
    assert.equal(slugify('Ünïcodé — tëst'), 'unicode-test');
    assert.equal(slugify('!!!'), 'message');
    assert.equal(slugify('a'.repeat(80)).length, 50);
  });
});

describe('preview', () => {
  const preview = (a: SendNotificationArgs, cfg: Record<string, unknown>) =>
    sendNotification.preview?.(a, {
      config: cfg,
      vault: undefined,
      files: noAccess(),
      signal: new AbortController().signal,
    });

  test('e-mail shows method, to, from, server, subject and the body', async () => {
    const text = await preview(
      { recipient: 'alice@example.com', subject: 'Hi', body: 'one\ntwo' },
      { email: { host: 'smtp.example.org', port: 587, from: 'vaultd@example.org' } },
    );
    assert.equal(
      text,
      'Send an e-mail\nTo: alice@example.com\nFrom: vaultd@example.org\nVia: SMTP smtp.example.org:587\nSubject: Hi\n\n> one\n> two',
    );
  });

  test('webhooks show the channel and the host, never the secret path', async () => {
    const text = String(
      await preview({ recipient: 'alerts', subject: 'S', body: 'b', method: 'slack' }, config()),
    );
    assert.match(text, /^Post to Slack\nChannel: alerts \(webhook on 127\.0\.0\.1:\d+\)/);
    assert.doesNotMatch(text, /XXXX/);
    const unknown = String(
      await preview({ recipient: 'nope', subject: 'S', body: 'b', method: 'discord' }, config()),
    );
    assert.match(unknown, /unknown: this call will fail; configured: ops/);
  });

  test('long bodies are cut with a count; the outbox says nothing leaves', async () => {
    const text = String(
      await preview(
        { recipient: 'x', subject: 'S', body: 'q'.repeat(1_500), method: 'outbox' },
        {},
      ),
    );
    assert.match(text, /^File in the vault's Outbox\/ folder \(nothing leaves this machine\)/);
    assert.match(text, /… \(300 more characters\)$/);
  });
});

test('the outbox links its source note by name, claim tag and folder left out', () => {
  assert.equal(sourceLink('In_Progress/daily.vaultd-1mi-905-681c-0.md'), '[[daily]]');
  assert.equal(sourceLink('Needs_Action/a note.md'), '[[a note]]');
  // A name a wiki link cannot hold is given as text.
  assert.equal(sourceLink('In_Progress/x]]|y.vaultd-1-2-3-4.md'), 'x]]|y');
});
