import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import dns from 'node:dns';
import { lookup as namedLookup } from 'node:dns';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { limitLookups, lookupStats } from '../../src/execute/lookup-limit.ts';

// Node's own lookup, before the limiter replaces it.
const realLookup = dns.lookup;
const FIXTURE = new URL('./fixtures/stuck-lookups.ts', import.meta.url).pathname;

/** Run the fixture with a pool of 4 threads and six lookups that hang. */
function stuckLookups(mode: 'limited' | 'unlimited'): {
  whileStuck: boolean;
  running: number;
  waiting: number;
  mostRunning: number;
  results: string[];
} {
  const dir = mkdtempSync(join(tmpdir(), 'vaultd-lookups-'));
  try {
    for (let i = 0; i < 6; i++) execFileSync('mkfifo', [join(dir, `fifo-${i}`)]);
    const run = spawnSync(process.execPath, ['--import', 'tsx', FIXTURE, dir, mode], {
      env: { ...process.env, UV_THREADPOOL_SIZE: '4' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('limitLookups', () => {
  it('keeps file work going while name servers never answer (the attack replayed)', () => {
    // Without a cap, six hanging lookups take all four threads of the pool, and a note's write,
    // rename and stat wait until a lookup gives up: what an agent gets by asking for fetches of
    // hosts whose name server never answers.
    const unlimited = stuckLookups('unlimited');
    assert.equal(unlimited.whileStuck, false);
    assert.equal(unlimited.mostRunning, 6);
    // With the cap (half the pool) the file work finishes while the lookups still hang, and every
    // lookup still gets its answer once it is released.
    const limited = stuckLookups('limited');
    assert.equal(limited.whileStuck, true);
    assert.equal(limited.running, 2);
    assert.equal(limited.waiting, 4);
    assert.equal(limited.mostRunning, 2);
    assert.deepEqual(limited.results, Array(6).fill('127.0.0.1'));
  });

  it('is what fetch and the named export use, and leaves addresses alone', async () => {
    const seen: string[] = [];
    limitLookups({
      max: 2,
      lookup: ((host: string, options: dns.LookupOptions, callback: never) => {
        seen.push(host);
        realLookup('127.0.0.1', options, callback);
      }) as unknown as typeof dns.lookup,
    });
    const server = createServer((_request, response) => response.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const response = await fetch(`http://localhost:${port}/`);
      assert.equal(await response.text(), 'ok');
      assert.ok(seen.includes('localhost'), JSON.stringify(seen));
      assert.equal(namedLookup, dns.lookup);
      const counted = seen.length;
      const viaPromises = await (await import('node:dns/promises')).lookup('localhost');
      assert.equal(viaPromises.address, '127.0.0.1');
      assert.equal(seen.length, counted + 1);
      const all = await dns.promises.lookup('localhost', { all: true });
      assert.deepEqual(all, [{ address: '127.0.0.1', family: 4 }]);
      const before = seen.length;
      await (await fetch(`http://127.0.0.1:${port}/`)).text();
      assert.equal(seen.length, before);
    } finally {
      server.close();
    }
  });

  it('fails a lookup that waited too long behind others that hang, and still runs the rest', async () => {
    const held: (() => void)[] = [];
    limitLookups({
      max: 1,
      maxWaitMs: 50,
      lookup: ((_host: string, _options: unknown, callback: (...a: unknown[]) => void) => {
        held.push(() => callback(null, '127.0.0.1', 4));
      }) as unknown as typeof dns.lookup,
    });
    const ask = (host: string): Promise<string> =>
      new Promise((resolve) => {
        dns.lookup(host, {}, (error, address) => {
          resolve(error === null ? String(address) : `${error.code}: ${error.message}`);
        });
      });
    // The expiry timer is unref'd (it never keeps a process up): this keeps the test's.
    const keepAlive = setInterval(() => undefined, 1000);
    const first = ask('hangs.example');
    const second = ask('waits.example');
    assert.match(await second, /^EAI_AGAIN: DNS lookup of waits.example waited 50 ms behind 1/);
    assert.equal(lookupStats().running, 1);
    assert.equal(lookupStats().waiting, 0);
    const third = ask('after.example');
    held.shift()?.();
    assert.equal(await first, '127.0.0.1');
    // The next in line starts when the first finishes.
    await new Promise((resolve) => setImmediate(resolve));
    held.shift()?.();
    assert.equal(await third, '127.0.0.1');
    clearInterval(keepAlive);
  });
});
