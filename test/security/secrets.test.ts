// Issue 14, attack 2: a credential in the config (an SMTP password from the environment, a token
// in a Slack webhook's path and query, user-info in a provider URL) must never reach a note, the
// execution log, the daemon's log or the event stream, even when a server quotes it back in an
// error. And a URL with user-info works as users expect: it is sent as an Authorization header.
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { collectSecrets, createRedactor } from '../../src/observe/redact.ts';
import {
  callBlock,
  makeVault,
  note,
  startCli,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { waitInFolder } from '../e2e/helpers.ts';
import { sendJson, startServer, type TestServer } from '../tools/http-server.ts';
import { smtpReply, startSmtp, type TestSmtp } from '../tools/smtp-server.ts';

const SMTP_PASS = 'hunter2-smtp-Passw0rd';
const SLACK_TOKEN = 'XyZsecretSlackToken123';
const QUERY_TOKEN = 'query-secret-9876';
const SEARX_PASS = 'searx-basic-pass-42';

describe('redaction', () => {
  it('collects secrets from secret keys, webhook URLs, user-info and the environment', () => {
    const secrets = collectSecrets(
      {
        tools: {
          notify: {
            email: { host: 'mail', pass: 'p4ssword!', user: 'me' },
            slack: { channels: { alerts: 'https://hooks.slack.com/services/T1/B2/abcdefgh' } },
          },
          web: { url: 'https://bob:pw-123456@search.example/', api_key_env: 'MY_KEY' },
        },
      },
      ['from-env-value'],
      { MY_KEY: 'the-key-value' },
    );
    for (const s of [
      'p4ssword!',
      'https://hooks.slack.com/services/T1/B2/abcdefgh',
      'services/T1/B2/abcdefgh',
      'bob:pw-123456',
      'pw-123456',
      'the-key-value',
      'from-env-value',
    ]) {
      assert.ok(secrets.includes(s), s);
    }
    assert.ok(!secrets.includes('me'), 'short values are not hidden');
    assert.ok(!secrets.includes('MY_KEY'), 'the name of a variable is not hidden, its value is');
    assert.ok(
      collectSecrets({ web: { api_key_env: 'BSAq7Xk2mPz9' } }, [], {}).includes('BSAq7Xk2mPz9'),
      'a key pasted into api_key_env by mistake is hidden',
    );
    // A key read from a file with its line break: the code sends it trimmed (review finding).
    assert.ok(
      collectSecrets({ web: { api_key_env: 'KEY_FILE_VALUE' } }, [], {
        KEY_FILE_VALUE: 'BSAkey1234567890\n',
      }).includes('BSAkey1234567890'),
    );
    const redact = createRedactor(secrets);
    assert.equal(
      redact('auth failed for p4ssword! at https://x:y@h/'),
      'auth failed for [redacted] at https://[redacted]@h/',
    );
    assert.equal(redact(JSON.stringify({ m: 'p4ssword!' })), '{"m":"[redacted]"}');
    assert.deepEqual(redact.deep({ a: ['the-key-value'], b: 1 }), { a: ['[redacted]'], b: 1 });
    // A payload without secrets is returned as it is; one with a secret is copied, the original
    // left alone, a `__proto__` key kept as data (never the copy's prototype).
    const clean = { a: ['x', { b: 'y' }], n: 2 };
    assert.equal(redact.deep(clean), clean);
    const hostile = JSON.parse('{"__proto__": {"k": "the-key-value"}, "l": [1, "p4ssword!"]}') as {
      l: unknown[];
    };
    const out = redact.deep(hostile) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal(JSON.stringify(out), '{"__proto__":{"k":"[redacted]"},"l":[1,"[redacted]"]}');
    assert.equal(hostile.l[1], 'p4ssword!');
  });

  it('hides the secrets in the environment and the arguments of the programs vaultd starts (review finding)', () => {
    // A server that echoed its environment or command line put these into the note: the keys
    // did not match the secret-key pattern.
    const secrets = collectSecrets(
      {
        tools: {
          mcp: {
            servers: {
              s: {
                command: 'server',
                args: [
                  '--api-key',
                  'sk-live-ARGSECRET123',
                  '--token=tok-EQUALS-987',
                  '--verbose',
                  '--no-auth',
                  'Notes',
                  '--auth',
                  '/home/alice/vault',
                  '--tokenizer',
                  'cl100k-base',
                  '--key-file',
                  '/etc/vaultd/key.pem',
                ],
                env: {
                  OPENAI_KEY: 'sk-live-ENVSECRET456',
                  NODE_ENV: 'production',
                  GIT_AUTHOR_NAME: 'Alice Example',
                  XDG_SESSION_TYPE: 'wayland',
                  KEYBOARD_LAYOUT: 'dvorak-intl',
                  githubToken: 'ghp-camelCASE-555',
                },
              },
            },
          },
          commands: { deploy: { env: { SENDGRID_KEY: 'SG.key-value-42', LANG: 'en_US.UTF-8' } } },
        },
      },
      [],
      {},
    );
    for (const secret of [
      'sk-live-ARGSECRET123',
      'tok-EQUALS-987',
      'sk-live-ENVSECRET456',
      'SG.key-value-42',
      'ghp-camelCASE-555',
    ]) {
      assert.ok(secrets.includes(secret), secret);
    }
    for (const plain of [
      'production',
      'en_US.UTF-8',
      '--verbose',
      'server',
      'Alice Example',
      'wayland',
      'dvorak-intl',
      '/home/alice/vault',
      'Notes',
      'cl100k-base',
      '/etc/vaultd/key.pem',
    ]) {
      assert.ok(!secrets.includes(plain), `${plain} is not a secret`);
    }
  });
});

describe('the encoded spellings of a secret', () => {
  it('redacts a secret base64-encoded inside other text, and form-encoded', () => {
    // Review finding: a server that echoes the request's headers back put a Basic authorization
    // of user:password into the result; only the plain spellings were matched.
    const secret = 'Zq7 pass/word+ü!';
    const redact = createRedactor([secret]);
    for (const user of ['', 'u', 'us', 'user', 'a-longer-user-name']) {
      const basic = Buffer.from(`${user}:${secret}`).toString('base64');
      const out = redact(`Authorization: Basic ${basic}`);
      assert.notEqual(out, `Authorization: Basic ${basic}`, user);
      assert.match(out, /\[redacted\]/);
      assert.ok(
        !Buffer.from(out.slice('Authorization: Basic '.length), 'base64')
          .toString('utf8')
          .includes('pass/word'),
        out,
      );
      const url = Buffer.from(`${user}:${secret}`).toString('base64url');
      assert.match(redact(url), /\[redacted\]/, url);
    }
    const form = new URLSearchParams({ password: secret }).toString();
    assert.equal(redact(form), 'password=[redacted]');
    // Ordinary text and other base64 are left alone.
    const other = Buffer.from('nothing secret here at all').toString('base64');
    assert.equal(redact(`a note ${other}`), `a note ${other}`);
  });
});

describe('secrets never leave config (black box)', { timeout: 90_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let smtp: TestSmtp;
  let slack: TestServer;
  let searx: TestServer;
  let port: number;

  before(async () => {
    smtp = await startSmtp({
      authOptional: false,
      onAuth(auth, _session, callback) {
        // A server that quotes the password back in its refusal.
        callback(
          smtpReply(535, `authentication failed for ${auth.username} with ${auth.password}`),
        );
      },
    });
    slack = await startServer((req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`no_service: ${req.url ?? ''}`);
    });
    searx = await startServer((req, res) => {
      if (
        req.headers.authorization !==
        `Basic ${Buffer.from(`searx:${SEARX_PASS}`).toString('base64')}`
      ) {
        res.writeHead(401);
        res.end(`bad credentials ${req.headers.authorization ?? ''}`);
        return;
      }
      sendJson(res, 200, {
        results: [{ title: 'Hit', url: 'https://hit.example/', content: 'snippet' }],
      });
    });
    vault = await makeVault();
    port = 20000 + Math.floor(Math.random() * 20000);
    const searxUrl = new URL(searx.origin);
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        [
          'http:',
          `  port: ${port}`,
          'tools:',
          '  web:',
          '    provider: searxng',
          `    url: http://searx:${SEARX_PASS}@${searxUrl.host}/`,
          '  notify:',
          '    email:',
          '      host: 127.0.0.1',
          `      port: ${smtp.port}`,
          '      secure: false',
          '      user: agent-mailer',
          '      pass: ${SMTP_PASS}',
          '      from: vaultd@example.org',
          '    slack:',
          '      channels:',
          `        alerts: ${slack.origin}/services/T000/B000/${SLACK_TOKEN}?token=${QUERY_TOKEN}`,
          'policy:',
          '  allow: [send_notification]',
          '',
        ].join('\n'),
    );
    daemon = startCli(['run', '--config', vault.configPath], { SMTP_PASS });
    await daemon.ready();
  });
  after(async () => {
    await daemon.stop();
    await smtp.close();
    await slack.close();
    await searx.close();
    await vault.cleanup();
  });

  it('sends URL user-info as an Authorization header, and keeps every secret out of notes, logs and events', async () => {
    const events: string[] = [];
    const controller = new AbortController();
    void fetch(`http://127.0.0.1:${port}/events`, { signal: controller.signal })
      .then(async (res) => {
        const reader = res.body?.getReader();
        for (;;) {
          const chunk = await reader?.read();
          if (chunk === undefined || chunk.done) break;
          events.push(Buffer.from(chunk.value).toString('utf8'));
        }
      })
      .catch(() => undefined);
    await vault.drop(
      'leak.md',
      note(
        'Leak',
        callBlock('search_web', { query: 'agents' }, 'search'),
        callBlock(
          'send_notification',
          { recipient: 'boss@example.com', subject: 'S', body: 'B' },
          'mail',
        ),
        callBlock(
          'send_notification',
          { recipient: 'alerts', subject: 'S', body: 'B', method: 'slack' },
          'slack',
        ),
      ),
    );
    const text = await waitInFolder(vault, 'leak.md', 'Failed');
    assert.match(text, /Hit/, 'the provider got the credentials from the URL and answered');
    assert.match(text, /authentication failed/, 'the SMTP refusal is reported');
    await waitFor(() => events.join('').includes('note.moved'), { message: 'events seen' });
    controller.abort();
    const logs = join(vault.root, 'Logs');
    const executionLog = (
      await Promise.all((await readdir(logs)).map((f) => readFile(join(logs, f), 'utf8')))
    ).join('');
    const where: [string, string][] = [
      ['the note', text],
      ['the execution log', executionLog],
      ['the daemon log', daemon.output()],
      ['the event stream', events.join('')],
    ];
    for (const [name, content] of where) {
      for (const secret of [SMTP_PASS, SLACK_TOKEN, QUERY_TOKEN, SEARX_PASS]) {
        assert.ok(!content.includes(secret), `${secret} leaked into ${name}`);
      }
    }
    assert.match(text, /\[redacted\]/, 'the SMTP server quoted the password: it was redacted');
  });
});
