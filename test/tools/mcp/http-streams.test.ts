// Event streams of an MCP server over Streamable HTTP (vaultd's fetch for the SDK's transport,
// src/tools/mcp/capped-fetch.ts). The SDK reconnected its GET event stream after the server's
// `retry:` with no minimum, counting its attempts from 0 again after each stream that ended
// cleanly: a server answering `retry: 0` and a priming event was asked about 300 times a second
// for ever (review finding 3). And it tied every POST only to the transport's abort signal: a
// call that timed out or was cancelled left its response stream and socket open until the
// transport closed, one more each time (review finding 2).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../../helpers/vault.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { hostWith, httpServer } from './helpers.ts';

const STREAMS = join(ROOT, 'test/fixtures/mcp/stream-http-server.mjs');

interface Stats {
  gets: number;
  resumes: number;
  open: number;
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

  it('a call that times out closes its response stream; one answered on a stream that stays open closes it', async () => {
    const { server, url } = await httpServer([STREAMS], { GET_STREAM: 'none' });
    try {
      const { host, executor } = await hostWith(
        dir,
        { s: { url, tools: { '*': 'safe' } } },
        [],
        500,
      );
      try {
        const calls = Array.from({ length: 10 }, (_, i) =>
          executor.execute({ id: `f${i}`, name: 's_forever', arguments: {} }),
        );
        for (const r of await Promise.all(calls)) assert.equal(r.success, false);
        // Before: all 10 stayed open until the connection closed.
        await waitFor(async () => (await stats(url)).open === 0, {
          message: 'the timed-out calls’ streams are closed',
          timeoutMs: 3000,
        });

        // A stream that sent an event id: the SDK would resume it with a GET once it is closed;
        // the request is over, so that GET is refused before it leaves vaultd.
        const primed = await Promise.all(
          Array.from({ length: 3 }, (_, i) =>
            executor.execute({ id: `p${i}`, name: 's_primed', arguments: {} }),
          ),
        );
        for (const r of primed) assert.equal(r.success, false);
        await waitFor(async () => (await stats(url)).open === 0, {
          message: 'the primed calls’ streams are closed',
          timeoutMs: 3000,
        });
        await new Promise((resolve) => setTimeout(resolve, 2500));
        assert.equal((await stats(url)).resumes, 0, 'no cancelled request is resumed');

        const lingered = await executor.execute({ id: 'l', name: 's_linger', arguments: {} });
        assert.equal(lingered.success, true, lingered.error?.message);
        assert.match(lingered.content, /linger answered/);
        await waitFor(async () => (await stats(url)).open === 0, {
          message: 'the answered call’s stream is closed',
          timeoutMs: 3000,
        });

        const r = await executor.execute({ id: 'h', name: 's_hello', arguments: {} });
        assert.equal(r.success, true, r.error?.message);
      } finally {
        await host.stop();
      }
    } finally {
      server.kill('SIGKILL');
    }
  });
});
