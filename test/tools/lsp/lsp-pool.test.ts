// The pool of language servers: calls that need one server at the same time share it.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { readLspConfig } from '../../../src/tools/lsp/config.ts';
import { ServerPool } from '../../../src/tools/lsp/pool.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { FIXTURES, processesIn } from './helpers.ts';

describe('the lsp server pool', { timeout: 60_000 }, () => {
  let root: string;
  before(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-pool-')));
    await writeFile(join(root, 'package.json'), '{}\n');
    // As root, sandboxed servers run as run_as (65534), which must be able to enter the folder.
    await chmod(root, 0o755);
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('starts one server for calls that ask for it together, and stops it with the pool', async () => {
    const config = readLspConfig({
      servers: {
        mini: {
          command: process.execPath,
          args: [join(FIXTURES, 'mini-server.mjs')],
          extensions: ['.mini'],
          root_markers: ['package.json'],
          // The sandbox's set-up takes a look at the folders, time in which other calls came.
          sandbox: true,
        },
      },
    });
    const server = config.servers.find((s) => s.name === 'mini');
    assert.ok(server);
    const pool = new ServerPool(config, [root], pino({ level: 'silent' }));
    const signal = new AbortController().signal;
    try {
      const got = await Promise.all(
        Array.from({ length: 6 }, () => pool.get(server, root, signal)),
      );
      assert.equal(new Set(got).size, 1, 'every call got the same server');
      assert.equal(pool.running.length, 1);
      const servers = (await processesIn(root)).filter((p) =>
        p.cmdline.startsWith(`${process.execPath} `),
      );
      assert.equal(servers.length, 1, 'one server process runs');
    } finally {
      await pool.stop();
    }
    await waitFor(async () => (await processesIn(root)).length === 0, { timeoutMs: 10_000 });
  });
});
