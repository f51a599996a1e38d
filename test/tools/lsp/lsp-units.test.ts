// The lsp pack's pure parts: positions between people and LSP, the JSON-RPC framing, workspace
// roots, config merging.
import assert from 'node:assert/strict';
import { link, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ToolError } from '../../../src/protocol/errors.ts';
import { readLspConfig, serverFor } from '../../../src/tools/lsp/config.ts';
import { JsonRpcConnection, JsonRpcError } from '../../../src/tools/lsp/json-rpc.ts';
import { splitLines, toHumanPosition, toLspPosition } from '../../../src/tools/lsp/positions.ts';
import { PlaceFinder } from '../../../src/tools/lsp/locations.ts';
import { sandboxArgs } from '../../../src/tools/lsp/sandbox.ts';
import { filesUnder, findWorkspaceRoot } from '../../../src/tools/lsp/workspace.ts';
import { createVaultAccess } from '../../../src/vault/access.ts';
import { waitFor } from '../../helpers/wait-for.ts';

describe('positions between people (1-based characters) and LSP (0-based UTF-16)', () => {
  const lines = splitLines('plain\r\n😀x = 1\nécrit 👍🏽 y\r\tz\n');
  const table: [string, { line: number; column: number }, { line: number; character: number }][] = [
    ['first character', { line: 1, column: 1 }, { line: 0, character: 0 }],
    [
      'end of a line (one past its last character)',
      { line: 1, column: 6 },
      { line: 0, character: 5 },
    ],
    ['after an emoji of two UTF-16 units', { line: 2, column: 2 }, { line: 1, character: 2 }],
    [
      'after an accented letter and a toned emoji',
      { line: 3, column: 9 },
      { line: 2, character: 10 },
    ],
    ['a line ended by a lone CR, with a tab', { line: 4, column: 2 }, { line: 3, character: 1 }],
    ['the empty last line', { line: 5, column: 1 }, { line: 4, character: 0 }],
  ];
  for (const [what, human, lsp] of table) {
    it(`converts ${what} both ways`, () => {
      assert.deepEqual(toLspPosition(lines, human), lsp);
      assert.deepEqual(toHumanPosition(lines, lsp), human);
    });
  }

  it('refuses a line or column outside the file, naming what there is', () => {
    const refused = (line: number, column: number, message: RegExp): void => {
      assert.throws(
        () => toLspPosition(lines, { line, column }),
        (e: unknown) =>
          e instanceof ToolError && e.code === 'INVALID_PARAMS' && message.test(e.message),
      );
    };
    refused(6, 1, /line 6 is outside the file, which has 5 lines/);
    refused(0, 1, /line 0 is outside/);
    refused(2, 8, /column 8 is outside line 2, which has 6 characters/);
    refused(2, 0, /column 0 is outside line 2/);
  });

  it('clamps an offset inside a surrogate pair or past the end instead of splitting a character', () => {
    assert.deepEqual(toHumanPosition(lines, { line: 1, character: 1 }), { line: 2, column: 1 });
    assert.deepEqual(toHumanPosition(lines, { line: 0, character: 99 }), { line: 1, column: 6 });
    assert.deepEqual(toHumanPosition(lines, { line: 9, character: 3 }), { line: 10, column: 4 });
  });
});

/** A connection to a fake peer: what the client writes, and a way to write to it. */
function pair(options: { maxMessageBytes?: number } = {}) {
  const fromPeer = new PassThrough();
  const toPeer = new PassThrough();
  const written: unknown[] = [];
  let pending = Buffer.alloc(0);
  toPeer.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      const end = pending.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/Content-Length: (\d+)/.exec(pending.subarray(0, end).toString())?.[1]);
      if (pending.length < end + 4 + length) return;
      written.push(JSON.parse(pending.subarray(end + 4, end + 4 + length).toString()));
      pending = pending.subarray(end + 4 + length);
    }
  });
  const notifications: [string, unknown][] = [];
  const closed: Error[] = [];
  const connection = new JsonRpcConnection(fromPeer, toPeer, {
    maxMessageBytes: options.maxMessageBytes ?? 1024,
    onNotification: (method, params) => notifications.push([method, params]),
    onRequest: (method) => {
      if (method === 'workspace/configuration') return [{ a: 1 }];
      throw new JsonRpcError(-32601, `no ${method}`);
    },
    onClose: (reason) => closed.push(reason),
  });
  const frame = (message: object): Buffer => {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...message }));
    return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
  };
  return { connection, fromPeer, written, notifications, closed, frame };
}

describe('JSON-RPC over Content-Length framing', () => {
  it('answers requests from messages split anywhere and several in one chunk', async () => {
    const p = pair();
    const answer = p.connection.request<{ ok: boolean }>('hover', { x: 1 }, { timeoutMs: 5000 });
    const bytes = Buffer.concat([
      p.frame({ method: 'window/logMessage', params: { message: 'é😀' } }),
      p.frame({ id: 1, result: { ok: true } }),
    ]);
    // One byte at a time: headers and multi-byte characters are split.
    for (const byte of bytes) p.fromPeer.write(Buffer.from([byte]));
    assert.deepEqual(await answer, { ok: true });
    assert.deepEqual(p.notifications, [['window/logMessage', { message: 'é😀' }]]);
  });

  it('answers the peer’s requests, with an error for the ones it does not handle', async () => {
    const p = pair();
    p.fromPeer.write(
      Buffer.concat([
        p.frame({ id: 7, method: 'workspace/configuration', params: {} }),
        p.frame({ id: 'x', method: 'workspace/unknown', params: {} }),
      ]),
    );
    await waitFor(() => p.written.length === 2, { message: 'both answered' });
    const byId = [...p.written].sort((a, b) =>
      String((a as { id: unknown }).id).localeCompare(String((b as { id: unknown }).id)),
    );
    assert.deepEqual(byId, [
      { jsonrpc: '2.0', id: 7, result: [{ a: 1 }] },
      { jsonrpc: '2.0', id: 'x', error: { code: -32601, message: 'no workspace/unknown' } },
    ]);
  });

  it('rejects an error answer with the peer’s code and message', async () => {
    const p = pair();
    const answer = p.connection.request('hover', {}, { timeoutMs: 5000 });
    p.fromPeer.write(p.frame({ id: 1, error: { code: -32602, message: 'bad position' } }));
    await assert.rejects(answer, (e: unknown) => e instanceof JsonRpcError && e.code === -32602);
  });

  it('gives up on a request at its timeout and tells the peer to cancel it', async () => {
    const p = pair();
    await assert.rejects(
      p.connection.request('hover', {}, { timeoutMs: 50 }),
      /no answer to hover within 50 ms/,
    );
    await waitFor(() => p.written.length === 2, { message: 'the cancel went out' });
    assert.deepEqual(p.written.at(-1), {
      jsonrpc: '2.0',
      method: '$/cancelRequest',
      params: { id: 1 },
    });
  });

  it('rejects at once when the call is aborted', async () => {
    const p = pair();
    const controller = new AbortController();
    const answer = p.connection.request(
      'hover',
      {},
      { timeoutMs: 60_000, signal: controller.signal },
    );
    controller.abort();
    await assert.rejects(answer, /aborted/);
  });

  const broken: [string, (p: ReturnType<typeof pair>) => Buffer, RegExp][] = [
    [
      'a message over the cap',
      () => Buffer.from('Content-Length: 4096\r\n\r\n'),
      /4096 bytes, over the 1024-byte cap/,
    ],
    [
      'a header section without an end',
      () => Buffer.alloc(9000, 'a'),
      /header section without an end/,
    ],
    ['a bad length', () => Buffer.from('Content-Length: -1\r\n\r\n'), /bad Content-Length/],
    ['no length', () => Buffer.from('Content-Type: x\r\n\r\n'), /without Content-Length/],
    ['a body that is not JSON', () => Buffer.from('Content-Length: 3\r\n\r\n{{{'), /not JSON/],
  ];
  for (const [what, bytes, message] of broken) {
    it(`closes the connection on ${what}, failing what is pending`, async () => {
      const p = pair();
      const answer = p.connection.request('hover', {}, { timeoutMs: 5000 });
      p.fromPeer.write(bytes(p));
      await assert.rejects(answer, message);
      assert.match(p.closed[0]?.message ?? '', message);
      await assert.rejects(p.connection.request('hover', {}, { timeoutMs: 5000 }), message);
    });
  }
});

describe('workspace roots and files', () => {
  let base: string;
  before(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-ws-')));
    await mkdir(join(base, 'vault/proj/src/deep'), { recursive: true });
    await mkdir(join(base, 'vault/loose'), { recursive: true });
    await mkdir(join(base, 'vault/proj/node_modules/dep'), { recursive: true });
    await mkdir(join(base, 'vault/proj/.hidden'), { recursive: true });
    await writeFile(join(base, 'package.json'), '{}');
    await writeFile(join(base, 'vault/proj/tsconfig.json'), '{}');
    for (const f of [
      'proj/src/a.ts',
      'proj/src/deep/b.tsx',
      'proj/src/c.md',
      'proj/node_modules/dep/d.ts',
      'proj/.hidden/e.ts',
      'loose/f.ts',
    ]) {
      await writeFile(join(base, 'vault', f), '');
    }
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('takes the nearest folder with a marker, never one above the root', async () => {
    const vault = join(base, 'vault');
    const markers = ['tsconfig.json', 'package.json'];
    assert.equal(
      await findWorkspaceRoot(join(vault, 'proj/src/deep/b.tsx'), false, vault, markers),
      join(vault, 'proj'),
    );
    assert.equal(
      await findWorkspaceRoot(join(vault, 'proj/src'), true, vault, markers),
      join(vault, 'proj'),
    );
    // The package.json above the vault is not the workspace of a file inside it.
    assert.equal(await findWorkspaceRoot(join(vault, 'loose/f.ts'), false, vault, markers), vault);
  });

  it('gathers a folder’s source files, sorted and capped, skipping hidden folders and node_modules', async () => {
    const dir = join(base, 'vault/proj');
    const all = await filesUnder(dir, new Set(['.ts', '.tsx']), 10);
    assert.deepEqual(all, {
      files: [join(dir, 'src/a.ts'), join(dir, 'src/deep/b.tsx')],
      more: false,
    });
    assert.deepEqual(await filesUnder(dir, new Set(['.ts', '.tsx']), 1), {
      files: [join(dir, 'src/a.ts')],
      more: true,
    });
  });
});

describe('tools.lsp config', () => {
  it('has typescript-language-server by default, and merges configured servers over it by name', () => {
    const defaults = readLspConfig({});
    assert.equal(serverFor(defaults, '/v/a.TSX')?.name, 'typescript');
    assert.equal(serverFor(defaults, '/v/a.py'), undefined);
    assert.equal(serverFor(defaults, '/v/.ts'), undefined, 'a dot file has no extension');
    const merged = readLspConfig({
      servers: {
        typescript: { args: ['--stdio', '--log-level', '1'] },
        pyright: { command: 'pyright-langserver', args: ['--stdio'], extensions: ['.py'] },
      },
    });
    assert.deepEqual(merged.servers.find((s) => s.name === 'typescript')?.args, [
      '--stdio',
      '--log-level',
      '1',
    ]);
    assert.equal(
      merged.servers.find((s) => s.name === 'typescript')?.command,
      'typescript-language-server',
    );
    assert.equal(serverFor(merged, '/v/a.py')?.name, 'pyright');
    const off = readLspConfig({ servers: { typescript: { enabled: false } } });
    assert.equal(off.servers.length, 0);
  });

  it('refuses two servers claiming one extension, and a server without a command', () => {
    assert.throws(
      () =>
        readLspConfig({
          servers: { deno: { command: 'deno', args: ['lsp'], extensions: ['.ts'] } },
        }),
      /\.ts files are claimed by both typescript and deno/,
    );
    assert.throws(
      () => readLspConfig({ servers: { x: { extensions: ['.x'] } } }),
      /servers\.x: command is missing/,
    );
  });
});

describe('places in files with other hard links', () => {
  let base: string;
  before(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-link-')));
    await mkdir(join(base, 'vault'));
    await mkdir(join(base, 'outside'));
    await writeFile(join(base, 'outside/secret.ts'), 'export const k = "hunter2";\n');
    await link(join(base, 'outside/secret.ts'), join(base, 'vault/leak.ts'));
    await writeFile(join(base, 'vault/own.ts'), 'export const own = 1;\n');
  });
  after(() => rm(base, { recursive: true, force: true }));

  it('leaves out a location in a hard-linked file, never quoting it, and keeps an ordinary one', async () => {
    const files = await createVaultAccess({
      roots: [{ name: 'vault', path: join(base, 'vault'), writable: true }],
    });
    const finder = new PlaceFinder(files);
    const range = { start: { line: 0, character: 0 }, end: { line: 0, character: 5 } };
    const leak = await finder.place(pathToFileURL(join(base, 'vault/leak.ts')).href, range);
    assert.equal(leak, undefined);
    assert.equal(finder.outside, 1);
    const own = await finder.place(pathToFileURL(join(base, 'vault/own.ts')).href, range);
    assert.equal(own?.text, 'export const own = 1;');
    const found = await filesUnder(join(base, 'vault'), new Set(['.ts']), 10);
    assert.deepEqual(found.files, [join(base, 'vault/own.ts')]);
  });
});

describe('the sandbox of a language server', () => {
  const binds = (args: readonly string[]): string[] =>
    args.flatMap((arg, i) => (arg === '--ro-bind' ? [args[i + 1] as string] : []));

  it('shows the system folders, the server’s installation and the roots, never all of /', () => {
    const args = sandboxArgs(
      [
        process.execPath,
        '/opt/vaultd/node_modules/typescript-language-server/lib/cli.mjs',
        '--stdio',
      ],
      '/srv/vault/code',
      ['/srv/vault'],
      { PATH: '/usr/bin' },
      ['/home/me/.local/bin/pylsp', '/home/me/.nvm/versions/node/v20/bin/node', '/home/me/tool'],
      ['/home/me/venv'],
    );
    const shown = binds(args);
    assert.ok(!shown.includes('/'), shown.join(' '));
    assert.ok(shown.includes('/usr'));
    for (const path of [
      '/srv/vault',
      '/home/me/venv',
      '/home/me/.local',
      '/home/me/.nvm/versions/node/v20',
      '/home/me',
    ]) {
      assert.ok(shown.includes(path), `${path} in ${shown.join(' ')}`);
    }
    assert.ok(!shown.includes('/opt/vaultd/node_modules'), 'under /opt, a system folder');
    assert.ok(!shown.some((p) => p.startsWith('/var') || p === '/root'), shown.join(' '));
  });

  it('hides vaultd’s files after the roots are shown, so no bind shows them again', () => {
    const hidden = ['--tmpfs', '/srv/vault/.vaultd', '--remount-ro', '/srv/vault/.vaultd'];
    const args = sandboxArgs(['/usr/bin/node'], '/srv/vault', ['/srv/vault'], {}, [], [], hidden);
    const root = args.findIndex((a, i) => a === '--ro-bind' && args[i + 1] === '/srv/vault');
    const hide = args.indexOf('--tmpfs', root);
    assert.ok(root >= 0 && hide > root, args.join(' '));
    assert.equal(args[hide + 1], '/srv/vault/.vaultd');
    assert.ok(args.indexOf('--chdir') > hide, 'before the command, after every bind');
  });

  it('runs the server only once the roots are the folders vaultd saw (a check before it)', () => {
    const identities = [{ path: '/srv/vault', id: '2049:12' }];
    const args = sandboxArgs(
      ['/usr/bin/node', 'server.js'],
      '/srv/vault',
      ['/srv/vault'],
      {},
      [],
      [],
      [],
      identities,
    );
    const command = args.slice(args.lastIndexOf('--') + 1);
    assert.equal(command[0], '/bin/bash', command.join(' '));
    assert.ok(command.includes('2049:12') && command.includes('/srv/vault'), command.join(' '));
    assert.deepEqual(command.slice(-2), ['/usr/bin/node', 'server.js']);
    // No check is added where there is nothing to check.
    const plain = sandboxArgs(['/usr/bin/node', 'server.js'], '/srv/vault', ['/srv/vault'], {});
    assert.deepEqual(plain.slice(plain.lastIndexOf('--') + 1), ['/usr/bin/node', 'server.js']);
  });

  it('shows a node_modules folder outside the system folders whole', () => {
    const shown = binds(
      sandboxArgs(['/usr/bin/node', '/work/app/node_modules/a/b/cli.mjs'], '/v', ['/v'], {}),
    );
    assert.ok(shown.includes('/work/app/node_modules'), shown.join(' '));
    assert.ok(!shown.includes('/work/app'), shown.join(' '));
  });
});
