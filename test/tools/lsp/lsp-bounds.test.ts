// What a language server can make vaultd hold: published diagnostics (kept only for a file a call
// waits for, at most 1,000 of a file's), what vaultd sent and the server has not read (16 MiB,
// then the server is ended), and the documents it opened (a hash, not a copy). Replays of the
// review's hostile servers (test/fixtures/lsp/hostile-server.mjs).
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino } from 'pino';
import { readLspConfig } from '../../../src/tools/lsp/config.ts';
import { JsonRpcConnection, JsonRpcError } from '../../../src/tools/lsp/json-rpc.ts';
import { LanguageServer } from '../../../src/tools/lsp/server.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { FIXTURES, processesIn, startLspHost, type LspHost } from './helpers.ts';

const HOSTILE = join(FIXTURES, 'hostile-server.mjs');

/** A hostile server started directly, for what the client holds. */
async function startHostile(root: string): Promise<LanguageServer> {
  const config = readLspConfig({
    servers: {
      hostile: { command: process.execPath, args: [HOSTILE], extensions: ['.flood'] },
    },
    diagnostics_settle_ms: 0,
  });
  const server = config.servers.find((s) => s.name === 'hostile');
  assert.ok(server);
  const ls = new LanguageServer({
    server,
    command: { file: process.execPath, args: [HOSTILE], real: HOSTILE },
    root,
    config,
    initializationOptions: {},
    roots: [root],
    logger: pino({ level: 'silent' }),
    onExit: () => undefined,
  });
  await ls.ready;
  return ls;
}

describe('diagnostics a server publishes', { timeout: 60_000 }, () => {
  let root: string;
  let ls: LanguageServer;
  const signal = new AbortController().signal;

  before(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-bounds-')));
    ls = await startHostile(root);
  });

  after(async () => {
    await ls?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('are not kept for files never opened, nor for an open file no call waits on', async () => {
    await ls.sync(join(root, 'a.flood'), 'FLOOD\n', 'flood', signal);
    // Answered after the flood it sent for the didOpen: every publish has been read by then.
    await assert.rejects(ls.request('vaultd/ping', null, signal), JsonRpcError);
    assert.deepEqual(ls.held(), { documents: 1, diagnosticFiles: 0, diagnosticItems: 0 });
  });

  it('are kept to a file’s first 1,000, copied and cut, and dropped once the call has them', async () => {
    const { uri, mark, version } = await ls.sync(
      join(root, 'a.flood'),
      'FLOOD\n',
      'flood',
      signal,
      true,
    );
    const report = await ls.diagnostics(uri, mark, version, signal);
    assert.equal(report?.total, 1500);
    assert.equal(report.items.length, 1000);
    assert.equal(report.items[0]?.message, `${'L'.repeat(4000)}…`);
    assert.deepEqual(report.items[1], {
      range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
      severity: 1,
      code: 'H1',
      source: 'hostile',
      message: 'problem 1',
    });
    assert.deepEqual(ls.held(), { documents: 1, diagnosticFiles: 0, diagnosticItems: 0 });
  });
});

describe('documents sent to a server', { timeout: 60_000 }, () => {
  let root: string;
  let ls: LanguageServer;

  before(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-docs-')));
    ls = await startHostile(root);
  });

  after(async () => {
    await ls?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('are not copied: vaultd keeps a hash of each, and still sends only changes', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const signal = new AbortController().signal;
    const size = 4 * 1024 * 1024 - 16;
    gc();
    const before = process.memoryUsage().heapUsed;
    const versions: number[] = [];
    for (let i = 0; i < 12; i++) {
      const text = String.fromCharCode(97 + i).repeat(size);
      versions.push((await ls.sync(join(root, `d${i}.flood`), text, 'flood', signal)).version);
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // Twelve copies would be 48 MiB.
    assert.ok(grown < 16 * 1024 * 1024, `the heap grew ${Math.round(grown / 1024 / 1024)} MiB`);
    const file = join(root, 'd0.flood');
    const same = await ls.sync(file, 'a'.repeat(size), 'flood', signal);
    const changed = await ls.sync(file, `b${'a'.repeat(size - 1)}`, 'flood', signal);
    assert.deepEqual([versions[0], same.version, changed.version], [1, 1, 2]);
  });
});

describe('JSON-RPC to a peer that stops reading', () => {
  function unread(maxUnreadBytes: number) {
    const fromPeer = new PassThrough();
    const toPeer = new PassThrough();
    const closed: Error[] = [];
    const connection = new JsonRpcConnection(fromPeer, toPeer, {
      maxMessageBytes: 1024 * 1024,
      maxUnreadBytes,
      onNotification: () => undefined,
      // Each answer is 10 kB: what a request for a few sections of large settings gets.
      onRequest: () => ['s'.repeat(10_000)],
      onClose: (reason) => closed.push(reason),
    });
    const frame = (message: object): Buffer => {
      const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...message }));
      return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
    };
    return { connection, fromPeer, toPeer, closed, frame };
  }

  it('closes past the unread cap, failing what is pending, and drops what was not read', async () => {
    const p = unread(64 * 1024);
    const answer = p.connection.request('hover', {}, { timeoutMs: 5000 });
    const requests = Array.from({ length: 100 }, (_, n) =>
      p.frame({ id: n, method: 'workspace/configuration', params: { items: [{}] } }),
    );
    p.fromPeer.write(Buffer.concat(requests));
    await assert.rejects(answer, /has not read the last 0\.\d\d MiB sent to it/);
    assert.match(p.closed[0]?.message ?? '', /over the 0\.06 MiB cap/);
    assert.equal(p.toPeer.destroyed, true);
    await assert.rejects(p.connection.request('hover', {}, { timeoutMs: 5000 }), /has not read/);
  });

  it('lets a sender wait until the peer has read what it was sent', async () => {
    const p = unread(64 * 1024 * 1024);
    p.connection.notify('textDocument/didOpen', { text: 'x'.repeat(1024 * 1024) });
    let drained = false;
    const wait = p.connection.drained().then(() => (drained = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(drained, false, 'nothing was read yet');
    p.toPeer.resume();
    await wait;
    assert.equal(p.closed.length, 0);
  });
});

describe('the lsp pack with hostile servers', { timeout: 60_000 }, () => {
  let base: string;
  let lsp: LspHost;

  before(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-hostile-')));
    await mkdir(join(base, 'vault/noread'), { recursive: true });
    await writeFile(join(base, 'vault/a.flood'), 'FLOOD\n');
    await writeFile(join(base, 'vault/noread/package.json'), '{}');
    await writeFile(join(base, 'vault/noread/x.noread'), 'NOREAD\n');
    const command = { command: process.execPath, args: [HOSTILE] };
    lsp = await startLspHost(
      base,
      {
        request_timeout_ms: 5000,
        servers: {
          flooder: { ...command, extensions: ['.flood'] },
          // Each workspace/configuration item is answered with the settings: 1 kB.
          noread: {
            ...command,
            extensions: ['.noread'],
            root_markers: ['package.json'],
            settings: { big: 'x'.repeat(1000) },
          },
        },
      },
      30_000,
    );
  });

  after(async () => {
    await lsp?.host.stop();
    await rm(base, { recursive: true, force: true });
  });

  it('says how many of a file’s diagnostics were left out', async () => {
    const result = await lsp.call('diagnostics', { path: 'a.flood' });
    assert.equal(result.success, true, result.content);
    const data = result.data as {
      files: { path: string; problems: number; left_out: number }[];
      places: unknown[];
    };
    assert.deepEqual(data.files, [
      { path: 'a.flood', answered: true, problems: 1000, left_out: 500 },
    ]);
    assert.equal(data.places.length, 1000);
    assert.match(
      result.content,
      /500 more diagnostics of a\.flood left out \(vaultd keeps a file's first 1000/,
    );
  });

  it('ends a server that stops reading what it is sent, failing the call with the reason', async () => {
    const result = await lsp.call('hover', { path: 'noread/x.noread', line: 1, column: 1 });
    assert.equal(result.error?.code, 'EXECUTION_FAILED', result.content);
    assert.match(result.error?.message ?? '', /has not read the last \d+ MiB sent to it/);
    await waitFor(async () => (await processesIn(join(base, 'vault/noread'))).length === 0, {
      message: 'the server was killed',
    });
  });
});

describe('a folder of more files than a server keeps open', { timeout: 60_000 }, () => {
  let base: string;
  let lsp: LspHost;
  const FILES = 250;

  before(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-many-')));
    await mkdir(join(base, 'vault/many'), { recursive: true });
    for (let i = 0; i < FILES; i++) {
      await writeFile(join(base, `vault/many/f${String(i).padStart(3, '0')}.mini`), 'ok\nWARN\n');
    }
    lsp = await startLspHost(
      base,
      {
        max_files: 1000,
        diagnostics_settle_ms: 0,
        diagnostics_timeout_ms: 2000,
        servers: {
          // Publishes each document's warnings when it is opened, as most servers do.
          mini: {
            command: process.execPath,
            args: [join(FIXTURES, 'mini-server.mjs'), '--push'],
            extensions: ['.mini'],
          },
        },
      },
      30_000,
    );
  });

  after(async () => {
    await lsp?.host.stop();
    await rm(base, { recursive: true, force: true });
  });

  it('gets every file’s diagnostics, the first files’ too', async () => {
    // The server keeps 200 documents open: all 250 were opened before any was asked for, so the
    // first 50 were closed, their diagnostics dropped, and each waited out its timeout unanswered.
    const result = await lsp.call('diagnostics', { path: 'many' });
    assert.equal(result.success, true, result.content);
    const data = result.data as {
      more_files: boolean;
      files: { path: string; answered: boolean; problems: number }[];
    };
    assert.equal(data.more_files, false);
    assert.equal(data.files.length, FILES);
    const unanswered = data.files.filter((f) => !f.answered || f.problems !== 1);
    assert.deepEqual(unanswered, []);
  });
});
