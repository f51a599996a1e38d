// Event streams of an MCP server over Streamable HTTP (vaultd's fetch for the SDK's transport,
// src/tools/mcp/capped-fetch.ts). The SDK reconnected its GET event stream after the server's
// `retry:` with no minimum, counting its attempts from 0 again after each stream that ended
// cleanly: a server answering `retry: 0` and a priming event was asked about 300 times a second
// for ever (review finding 3).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../../helpers/vault.ts';
import { hostWith, httpServer } from './helpers.ts';

const STREAMS = join(ROOT, 'test/fixtures/mcp/stream-http-server.mjs');

interface Stats {
  gets: number;
}

async function stats(url: string): Promise<Stats> {
  const response = await fetch(new URL('/stats', url));
  return (await response.json()) as Stats;
}

describe('event streams of an MCP server over HTTP', { timeout: 60_000 }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-mcp-streams-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a GET stream answering `retry: 0` and ending at once is asked again a few times, not in a loop', async () => {
    const { server, url } = await httpServer([STREAMS], { GET_STREAM: 'retry0' });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const { host, executor } = await hostWith(dir, { s: { url, tools: { '*': 'safe' } } });
      try {
        const from = (await stats(url)).gets;
        await new Promise((resolve) => setTimeout(resolve, 3000));
        const gets = (await stats(url)).gets - from;
        // Before: about 300 a second.
        assert.ok(gets <= 10, `${gets} GETs in 3 s`);
        assert.deepEqual(
          warnings.filter((name) => name === 'MaxListenersExceededWarning'),
          [],
        );
        const r = await executor.execute({ id: 'h', name: 's_hello', arguments: {} });
        assert.equal(r.success, true, r.error?.message);
        assert.match(r.content, /hello answered/);
      } finally {
        await host.stop();
      }
    } finally {
      process.off('warning', onWarning);
      server.kill('SIGKILL');
    }
  });
});
