// A server's tool list is read within a budget: a hostile server listing a hundred pages of one
// tool with a megabytes-long description each, again at every tools/list_changed, made vaultd read
// and hold about 1 GB (descriptions kept whole until compiled, lists compared as JSON).
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { readServers } from '../../../src/tools/mcp/config.ts';
import { McpConnection } from '../../../src/tools/mcp/connection.ts';
import { jsonChars, MAX_LISTING_CHARS } from '../../../src/tools/mcp/list-tools.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { hostile, hostWith, toolWith } from './helpers.ts';

/** A logger whose lines are kept, parsed. */
function keptLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

async function listings(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
}

describe('the MCP tool listing budget', { timeout: 120_000 }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-mcp-listing-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('stops paging once 2 MiB of declarations came, keeps descriptions cut, and lists an unchanged list again without taking it', async () => {
    const log = join(dir, 'pages.log');
    // A hundred pages of one tool of a million characters: two fit in the budget, the third not.
    const [config] = readServers({
      servers: {
        h: hostile(
          [],
          {},
          {
            env: {
              HOSTILE_PAGES: '100:1000000',
              HOSTILE_LIST_LOG: log,
              HOSTILE_RESULTS: JSON.stringify({ page0: { relist: [] } }),
            },
          },
        ),
      },
    });
    assert.ok(config !== undefined);
    const { logger, lines } = keptLogger();
    let changes = 0;
    const connection = new McpConnection(config, logger, () => (changes += 1));
    try {
      await connection.start();
      assert.deepEqual(await listings(log), ['first', '1', '2'], 'no page after the third');
      const tools = connection.tools;
      assert.deepEqual(
        tools.map((t) => t.name),
        ['page0', 'page1'],
      );
      for (const tool of tools) {
        assert.match(tool.description ?? '', /^x{4000}… \(cut at 4000 characters\)$/);
      }
      const warned = lines.find((l) => String(l['msg']).includes('vaultd reads of one listing'));
      assert.deepEqual(warned?.['names'], ['page2'], 'the log says which tools were left out');
      assert.equal(warned?.['more_pages'], true);

      // The server says its list changed (the same list): listed again within the budget, and
      // taken as unchanged (nothing compiled again).
      const result = await connection.call(
        'page0',
        {},
        { signal: new AbortController().signal, timeoutMs: 30_000 },
      );
      assert.equal(result.isError, undefined);
      await waitFor(async () => (await listings(log)).length === 6, {
        message: 'listed again',
        timeoutMs: 30_000,
      });
      assert.deepEqual((await listings(log)).slice(3), ['first', '1', '2']);
      await waitFor(() => lines.filter((l) => l['names'] !== undefined).length === 2, {
        message: 'the second listing finished',
      });
      assert.equal(connection.tools, tools, 'the same list kept');
      assert.equal(changes, 1, 'only the first listing was a change');
    } finally {
      await connection.stop();
    }
  });

  it('counts what a page holds besides its tools, and a value nested too deep to write', () => {
    assert.equal(jsonChars('abc', 100), 5);
    assert.ok(jsonChars({ tools: [], _meta: { pad: 'x'.repeat(10_000) } }, 100) > 100);
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    assert.throws(() => JSON.stringify(deep), RangeError);
    assert.ok(jsonChars(deep, MAX_LISTING_CHARS) > 200_000);
  });

  it('keeps a list of ordinary tools whole, and a long description cut in the tool vaultd declares', async () => {
    const { registry, host } = await hostWith(dir, {
      h: hostile([
        toolWith(
          'a',
          {},
          { description: `${'d'.repeat(5000)}END`, _meta: { pad: 'p'.repeat(10) } },
        ),
        toolWith('b', { q: { type: 'string' } }),
      ]),
    });
    try {
      assert.deepEqual(
        registry.names().filter((n) => n.startsWith('h_')),
        ['h_a', 'h_b'],
      );
      assert.match(
        registry.get('h_a')?.description ?? '',
        /^d{4000}… \(cut at 4000 characters\)\n\n/,
      );
    } finally {
      await host.stop();
    }
  });
});
