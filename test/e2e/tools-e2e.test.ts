// Issue 4, end to end: the built-in tools through a running daemon child process, against a fake
// SearXNG JSON API and a real SMTP server on 127.0.0.1.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sendJson, startServer, type TestServer } from '../tools/http-server.ts';
import { startSmtp, type TestSmtp } from '../tools/smtp-server.ts';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  editInPlace,
  foldersOf,
  readLogs,
  startDaemon,
  stopDaemon,
  tickBox,
  waitInFolder,
  waitPending,
} from './helpers.ts';

describe(
  'e2e: search_web and send_notification through the daemon (issue 4)',
  { timeout: 120_000 },
  () => {
    let vault: TempVault;
    let daemon: DaemonProcess;
    let searx: TestServer;
    let smtp: TestSmtp;

    before(async () => {
      searx = await startServer((req, res) => {
        if (req.url.pathname !== '/search' || req.url.searchParams.get('format') !== 'json') {
          res.writeHead(404);
          res.end();
          return;
        }
        const q = req.url.searchParams.get('q') ?? '';
        sendJson(res, 200, {
          query: q,
          number_of_results: 3,
          results: [
            {
              url: 'https://example.org/frameworks',
              title: `<b>${q}</b>: an overview`,
              content: 'A survey of agent frameworks &amp; their tools.',
              engine: 'duckduckgo',
              score: 3,
            },
            {
              url: 'https://www.example.org/frameworks/',
              title: 'duplicate of the first',
              content: 'same page',
              engine: 'bing',
              score: 2,
            },
            {
              url: 'https://example.com/loop',
              title: 'The agent loop',
              content: 'Plan, act, observe.',
              engine: 'brave',
              score: 1,
            },
          ],
        });
      });
      smtp = await startSmtp();
      vault = await makeVault(
        [
          'tools:',
          '  search_web:',
          '    provider: searxng',
          `    url: ${searx.origin}`,
          '  send_notification:',
          '    email:',
          '      host: 127.0.0.1',
          `      port: ${smtp.port}`,
          '      secure: false',
          '      from: vaultd <vaultd@example.org>',
          '',
        ].join('\n'),
      );
      daemon = await startDaemon(vault);
    });

    after(async () => {
      const code = await stopDaemon(daemon);
      await Promise.all([searx.close(), smtp.close()]);
      assert.equal(code, 0, `daemon exit code, output:\n${daemon.output().slice(-3000)}`);
      await vault.cleanup();
    });

    it('runs a search_web call through SearXNG and files the note in Done with the hits', async () => {
      await vault.drop(
        'search.md',
        note(
          'Search',
          callBlock('search_web', { query: 'AI agent frameworks', num_results: 3 }, 'search-1'),
        ),
      );
      const text = await waitInFolder(vault, 'search.md', 'Done');
      assert.deepEqual(await foldersOf(vault, 'search.md'), ['Done']);

      const seen = searx.requests.find(
        (r) => r.url.searchParams.get('q') === 'AI agent frameworks',
      );
      assert.ok(seen, 'SearXNG was asked the query');
      assert.equal(seen.url.searchParams.get('format'), 'json');

      const [result] = resultsOf(text);
      assert.equal(result?.id, 'search-1');
      assert.equal(result?.status, 'success');
      assert.equal(result?.metadata['approved_by'], 'auto');
      assert.deepEqual(result?.data, {
        results: [
          {
            title: 'AI agent frameworks: an overview',
            url: 'https://example.org/frameworks',
            snippet: 'A survey of agent frameworks & their tools.',
          },
          {
            title: 'The agent loop',
            url: 'https://example.com/loop',
            snippet: 'Plan, act, observe.',
          },
        ],
      });
      // The readable part: a callout with numbered links and their snippets.
      assert.match(text, /^> \[!success\] search\\?_web · search-1 · success$/m);
      assert.match(
        text,
        /^> 1\. \[AI agent frameworks: an overview\]\(https:\/\/example\.org\/frameworks\)$/m,
      );
      assert.match(text, /^> 2\. \[The agent loop\]\(https:\/\/example\.com\/loop\)$/m);
      assert.match(text, /^>\s+Plan, act, observe\.$/m);
      assert.match(text, /^status: done$/m);
    });

    it('holds a send_notification call for approval, sends it after the box is ticked, and files the note in Done', async () => {
      await vault.drop(
        'notify.md',
        note(
          'Notify',
          callBlock(
            'send_notification',
            {
              recipient: 'owner@example.com',
              subject: 'Agent frameworks: summary',
              body: 'Found 2 frameworks.\nSee the research note.',
              method: 'email',
            },
            'notify-1',
          ),
        ),
      );
      const pending = await waitPending(vault, 'notify.md');
      assert.deepEqual(await foldersOf(vault, 'notify.md'), ['Pending_Approval']);
      assert.equal(smtp.received.length, 0, 'nothing sent before the approval');
      assert.match(pending, /^status: pending_approval$/m);
      assert.match(pending, /^### send_notification · `notify-1`$/m);
      assert.match(pending, /owner@example\.com/);
      assert.match(pending, /^- \[ \] approve$/m);
      assert.equal(resultsOf(pending).length, 0);

      // The human ticks approve in Obsidian: the editor saves the file in place.
      const pendingPath = join(vault.root, 'Pending_Approval', 'notify.md');
      await editInPlace(pendingPath, (t) => tickBox(t, 'notify-1', 'approve'));

      const done = await waitInFolder(vault, 'notify.md', 'Done');
      assert.deepEqual(await foldersOf(vault, 'notify.md'), ['Done']);
      assert.equal(smtp.received.length, 1);
      const mail = smtp.received[0];
      assert.deepEqual(mail?.to, ['owner@example.com']);
      assert.equal(mail?.from, 'vaultd@example.org');
      assert.match(mail?.raw ?? '', /^Subject: Agent frameworks: summary\r?$/m);
      assert.match(mail?.raw ?? '', /Found 2 frameworks\./);
      const headerId = /^Message-ID: (<[^>]+>)\r?$/im.exec(mail?.raw ?? '')?.[1];
      assert.ok(headerId, 'the message has a Message-ID header');

      const [result] = resultsOf(done);
      assert.equal(result?.status, 'success');
      assert.equal(result?.metadata['approved_by'], 'human');
      assert.equal((result?.data as { message_id?: unknown }).message_id, headerId);
      assert.doesNotMatch(done, /## Approval/, 'the Approval section is gone once decided');
      assert.match(done, /^status: done$/m);

      const logged = await waitFor(async () =>
        (await readLogs(vault)).find((l) => l.call_id === 'notify-1'),
      );
      assert.equal(logged.status, 'success');
      assert.equal(logged.approved_by, 'human');
    });
  },
);
