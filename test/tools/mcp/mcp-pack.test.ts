// The mcp pack against real MCP servers: the reference "everything" server (stdio and Streamable
// HTTP) and a small crashing server built with the SDK, through the pack host and executor, and
// end to end from notes with a daemon child process.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { ToolProgress } from '../../../src/protocol/types.ts';
import { readServers } from '../../../src/tools/mcp/config.ts';
import { McpConnection } from '../../../src/tools/mcp/connection.ts';
import { makeOutputValidator } from '../../../src/tools/mcp/output-validator.ts';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation/types.js';
import { makeUntrustedCompiler } from '../../../src/protocol/untrusted-schema.ts';
import { mapToolName } from '../../../src/tools/mcp/tool-name.ts';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  ROOT,
  runCli,
  type DaemonProcess,
  type TempVault,
} from '../../helpers/vault.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { EVERYTHING, hostile, hostWith, httpServer, toolWith } from './helpers.ts';
import { moveNote, startDaemon, stopDaemon, waitInFolder, waitPending } from '../../e2e/helpers.ts';

const CRASHY = join(ROOT, 'test/fixtures/mcp/crashy-server.mjs');
const HUGE = join(ROOT, 'test/fixtures/mcp/huge-http-server.mjs');
const FILESYSTEM = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

describe('mcp pack', { timeout: 120_000 }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-mcp-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('maps tool names into vaultd’s name rule', () => {
    assert.equal(mapToolName('everything', 'get-sum'), 'everything_get_sum');
    assert.equal(mapToolName('fs', 'Read File!'), 'fs_read_file');
    assert.equal(mapToolName('x', '---'), 'x');
  });

  it('restarts a server that crashes mid-call: the call gets a clear error, later calls work, and a changed tool list is followed', async () => {
    const starts = join(dir, 'starts.txt');
    const { registry, host, executor } = await hostWith(
      dir,
      {
        crashy: {
          command: process.execPath,
          args: [CRASHY],
          env: { STARTS_FILE: starts },
          tools: { count: 'safe', list_grows: 'safe', fail: 'safe', grown: 'safe' },
        },
      },
      ['crashy_crash'],
    );
    try {
      assert.deepEqual(registry.names(), [
        'crashy_count',
        'crashy_crash',
        'crashy_fail',
        'crashy_hang',
        'crashy_list_grows',
        'search_web',
        'send_notification',
      ]);
      assert.equal(
        registry.get('crashy_crash')?.safety,
        'dangerous',
        'dangerous unless configured',
      );
      const counted = await executor.execute({
        id: 'c1',
        name: 'crashy_count',
        arguments: { by: 2 },
      });
      assert.equal(counted.content, 'calls: 2', 'structuredContent is the data');
      assert.deepEqual(counted.data, { calls: 2 });

      const bad = await executor.execute({
        id: 'c2',
        name: 'crashy_count',
        arguments: { by: 'x' },
      });
      assert.equal(
        bad.error?.code,
        'INVALID_PARAMS',
        'the server’s schema, checked before the call',
      );

      const failed = await executor.execute({ id: 'c3', name: 'crashy_fail', arguments: {} });
      assert.equal(failed.error?.code, 'EXECUTION_FAILED');
      assert.match(failed.error?.message ?? '', /the fail tool failed on purpose/);

      const crashed = await executor.execute({ id: 'c4', name: 'crashy_crash', arguments: {} });
      assert.equal(crashed.status, 'error');
      assert.match(crashed.error?.message ?? '', /MCP server crashy/);
      await waitFor(async () => (await readFile(starts, 'utf8')).trim().split('\n').length === 2, {
        message: 'the server started again',
      });
      const again = await waitFor(async () => {
        const r = await executor.execute({ id: 'c5', name: 'crashy_count', arguments: { by: 1 } });
        return r.success ? r : undefined;
      });
      assert.deepEqual(again.data, { calls: 1 }, 'a fresh process');

      await executor.execute({ id: 'c6', name: 'crashy_list_grows', arguments: {} });
      await waitFor(() => registry.has('crashy_grown'), { message: 'the new tool registered' });
      assert.equal(
        (await executor.execute({ id: 'c7', name: 'crashy_grown', arguments: {} })).content,
        'grown',
      );
    } finally {
      await host.stop();
    }
    assert.equal(registry.has('crashy_count'), false, 'its tools go with it');
  });

  it('starts a server that fails to start again once per backoff, one process at a time, none left after a stop (review finding)', async () => {
    // A start that failed left two retries (the closing transport's and the failed start's own):
    // the restarts doubled at each failure, and of two that came up the first was overwritten,
    // its process never ended, not even at the stop.
    const starts = join(dir, 'starts-fail.txt');
    const { executor, host } = await hostWith(dir, {
      crashy: {
        command: process.execPath,
        args: [CRASHY],
        env: { STARTS_FILE: starts, FAIL_STARTS: '2' },
        tools: { count: 'safe', crash: 'safe', hang: 'safe' },
      },
    });
    const pids = async (): Promise<number[]> =>
      (await readFile(starts, 'utf8')).trim().split('\n').map(Number);
    const alive = async (): Promise<number[]> =>
      (await pids()).filter((pid) => {
        try {
          return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
        } catch {
          return false;
        }
      });
    try {
      await executor.execute({ id: 'f1', name: 'crashy_crash', arguments: {} });
      // Start 2 fails at once; start 3 comes up after the backoff.
      await waitFor(
        async () =>
          (await executor.execute({ id: 'f2', name: 'crashy_count', arguments: { by: 1 } }))
            .success,
        { timeoutMs: 20_000, message: 'the server back after a failed start' },
      );
      // A second retry left by the failed start would start one more within its backoff (4 s).
      await new Promise((resolve) => setTimeout(resolve, 5000));
      assert.equal((await pids()).length, 3, 'one start per failure');
      assert.equal((await alive()).length, 1, 'one server process');

      // A call in flight when vaultd closes the connection itself fails at once, not at its
      // timeout (the SDK's close handler was cleared with vaultd's).
      const hanging = executor.execute({ id: 'f3', name: 'crashy_hang', arguments: {} });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await host.stop();
      const hung = await hanging;
      assert.equal(hung.status, 'error');
      assert.notEqual(hung.error?.code, 'TIMEOUT', JSON.stringify(hung.error));
    } finally {
      await host.stop();
    }
    await waitFor(async () => (await alive()).length === 0, { message: 'no server left' });
  });

  it('runs the reference filesystem server over stdio: reads inside its folder, an error outside, writes dangerous', async () => {
    const shared = join(dir, 'shared');
    await mkdir(shared, { recursive: true });
    await writeFile(join(shared, 'hello.txt'), 'hello from the filesystem server\n');
    await writeFile(join(dir, 'secret.txt'), 'not shared\n');
    const { registry, host, executor } = await hostWith(dir, {
      files: {
        command: process.execPath,
        args: [FILESYSTEM, shared],
        tools: { 'read_*': 'safe', 'list_*': 'safe' },
      },
    });
    try {
      const names = registry.names().filter((n) => n.startsWith('files_'));
      assert.ok(names.includes('files_read_text_file'), names.join(', '));
      assert.equal(registry.get('files_read_text_file')?.safety, 'safe', 'configured by glob');
      assert.equal(registry.get('files_write_file')?.safety, 'dangerous', 'everything else');
      const read = await executor.execute({
        id: 'f1',
        name: 'files_read_text_file',
        arguments: { path: join(shared, 'hello.txt') },
      });
      assert.equal(read.success, true, read.content);
      assert.match(read.content, /hello from the filesystem server/);
      const outside = await executor.execute({
        id: 'f2',
        name: 'files_read_text_file',
        arguments: { path: join(dir, 'secret.txt') },
      });
      assert.equal(outside.success, false, 'the server refuses a path outside its folder');
      assert.doesNotMatch(outside.content + (outside.error?.message ?? ''), /not shared/);
      // A dangerous MCP tool never runs without a human.
      const write = await executor.execute({
        id: 'f3',
        name: 'files_write_file',
        arguments: { path: join(shared, 'new.txt'), content: 'x' },
      });
      assert.equal(write.success, false);
      assert.equal(existsSync(join(shared, 'new.txt')), false);
    } finally {
      await host.stop();
    }
  });

  it('speaks Streamable HTTP to the reference server, and cancels a call past its timeout', async () => {
    const { server, url } = await httpServer([EVERYTHING, 'streamableHttp']);
    try {
      const { host, executor } = await hostWith(dir, {
        everything: {
          url,
          tools: { 'get-sum': 'safe', 'trigger-long-running-operation': 'safe' },
        },
      });
      try {
        const sum = await executor.execute({
          id: 's1',
          name: 'everything_get_sum',
          arguments: { a: 2, b: 3 },
        });
        assert.equal(sum.success, true, sum.content);
        assert.match(sum.content, /5/);
        const started = performance.now();
        const long = await executor.execute({
          id: 's2',
          name: 'everything_trigger_long_running_operation',
          arguments: { duration: 60, steps: 60 },
        });
        assert.equal(long.error?.code, 'TIMEOUT');
        assert.ok(performance.now() - started < 30_000, 'it did not wait for the whole operation');
      } finally {
        await host.stop();
      }
    } finally {
      server.kill('SIGKILL');
    }
  });

  it('cuts off an answer over 10 MiB from a server over HTTP, as JSON or as an event, and goes on', async () => {
    // The SDK reads an HTTP answer or event to its end whatever its size (it caps a stdio
    // server's at 10 MiB): one answer could fill vaultd's memory.
    for (const json of ['1', '0']) {
      const { server, url } = await httpServer([HUGE], { JSON_RESPONSE: json });
      try {
        const { host, executor } = await hostWith(dir, {
          huge: { url, tools: { huge: 'safe', small: 'safe' } },
        });
        try {
          const fits = await executor.execute({
            id: `h1${json}`,
            name: 'huge_huge',
            arguments: { bytes: 1_000_000 },
          });
          assert.equal(fits.success, true, fits.content);
          const over = await executor.execute({
            id: `h2${json}`,
            name: 'huge_huge',
            arguments: { bytes: 11 * 1024 * 1024 },
          });
          // At once, with the reason (an event stream's request would wait for its timeout).
          assert.equal(over.error?.code, 'EXECUTION_FAILED', `json ${json}`);
          assert.match(over.error?.message ?? '', /more than 10485760 bytes; it was cut off/);
          await waitFor(
            async () =>
              (await executor.execute({ id: `h3${json}`, name: 'huge_small', arguments: {} }))
                .success,
            { message: 'a later call works', timeoutMs: 30_000 },
          );
        } finally {
          await host.stop();
        }
      } finally {
        server.kill('SIGKILL');
      }
    }
  });
});

describe('mcp pack against a hostile server', { timeout: 120_000 }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-mcp-hostile-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a server’s patterns with RE2: a catastrophic pattern in an input or output schema cannot hold the main thread', async () => {
    // With JavaScript's engine each check below backtracks for ever (2^40 ways to split the a's).
    const evil = { type: 'string', pattern: '^(a|a)*$' };
    const stuck = `${'a'.repeat(40)}!`;
    const { registry, host, executor } = await hostWith(dir, {
      h: hostile(
        [
          toolWith(
            'match',
            { s: evil },
            {
              outputSchema: { type: 'object', properties: { s: evil } },
            },
          ),
          toolWith('lookahead', { s: { type: 'string', pattern: '^(?!x)' } }),
          toolWith('huge', { s: { type: 'string', pattern: '.{1000}.{1000}.{1000}' } }),
          toolWith('plain', { s: { type: 'string', pattern: '^\\u0061+$' } }),
        ],
        {
          match: {
            result: { content: [{ type: 'text', text: 'x' }], structuredContent: { s: stuck } },
          },
        },
      ),
    });
    try {
      const input = await executor.execute({ id: 'r1', name: 'h_match', arguments: { s: stuck } });
      assert.equal(input.error?.code, 'INVALID_PARAMS', input.content);
      const output = await executor.execute({ id: 'r2', name: 'h_match', arguments: { s: 'a' } });
      assert.equal(output.error?.code, 'EXECUTION_FAILED');
      assert.match(output.error?.message ?? '', /does not match the tool's output schema/);
      assert.equal(
        registry.has('h_lookahead'),
        false,
        'a pattern RE2 cannot run leaves its tool out',
      );
      assert.equal(registry.has('h_huge'), false, 'so does one of over 2,000 RE2 instructions');
      const plain = await executor.execute({ id: 'r3', name: 'h_plain', arguments: { s: 'aa' } });
      assert.equal(plain.success, true, '\\u escapes are read as in JavaScript');
      const wrong = await executor.execute({ id: 'r4', name: 'h_plain', arguments: { s: 'ab' } });
      assert.equal(wrong.error?.code, 'INVALID_PARAMS');
    } finally {
      await host.stop();
    }
  });

  it('leaves out only the tool whose output schema cannot be compiled; the server’s other tools work', async () => {
    const { registry, host, executor } = await hostWith(dir, {
      h: hostile([
        toolWith(
          'broken',
          {},
          { outputSchema: { type: 'object', properties: { x: { type: 'nope' } } } },
        ),
        toolWith('fine', {}),
      ]),
    });
    try {
      assert.equal(registry.has('h_broken'), false);
      assert.equal(
        (await executor.execute({ id: 'o1', name: 'h_fine', arguments: {} })).content,
        'ok',
      );
    } finally {
      await host.stop();
    }
  });

  it('keeps each server’s `$id`s to itself: two servers may use one, and a tool keeps its own when the list changes', async () => {
    const withId = toolWith('args', { n: { type: 'integer' } });
    (withId as { inputSchema: Record<string, unknown> }).inputSchema['$id'] =
      'https://example.com/schemas/args';
    const { registry, host, executor } = await hostWith(dir, {
      a: hostile([withId, toolWith('grow', {})], {
        grow: { relist: [withId, toolWith('grow', {}), toolWith('grown', {})] },
      }),
      b: hostile([withId]),
    });
    try {
      assert.ok(registry.has('a_args') && registry.has('b_args'), registry.names().join(', '));
      await executor.execute({ id: 'i1', name: 'a_grow', arguments: {} });
      await waitFor(() => registry.has('a_grown'), { message: 'the new list is taken' });
      assert.ok(registry.has('a_args'), 'compiled again without "already exists"');
      const call = await executor.execute({ id: 'i2', name: 'a_args', arguments: { n: 'x' } });
      assert.equal(call.error?.code, 'INVALID_PARAMS');
    } finally {
      await host.stop();
    }
  });

  it('refuses servers whose prefixes overlap, so that no server’s tool can take the name of another’s', async () => {
    // Server `a` adds `b_y`, which is `a_b_y`: the name of `y` of server `a_b`, with its grants.
    const servers = {
      a: hostile([toolWith('x', {})], { x: { relist: [toolWith('x', {}), toolWith('b_y', {})] } }),
      a_b: hostile([toolWith('y', {})], {}, { tools: {} }),
    };
    await assert.rejects(
      hostWith(dir, servers),
      /servers 'a' \(prefix 'a'\) and 'a_b' \(prefix 'a_b'\) overlap/,
    );
    await assert.rejects(
      hostWith(dir, { one: hostile([]), two: hostile([], {}, { prefix: 'one' }) }),
      /overlap/,
    );
    const { registry, host } = await hostWith(dir, {
      ab: hostile([toolWith('x', {})]),
      a: hostile([toolWith('b_x', {})]),
    });
    try {
      assert.ok(registry.has('ab_x') && registry.has('a_b_x'), 'ab and a do not overlap');
    } finally {
      await host.stop();
    }
  });

  it('keeps a server’s progress reports small: a message is cut, a fraction kept between 0 and 1', async () => {
    // Each report becomes a `tool.progress` event, and the daemon keeps the last 200 for replay:
    // 200 messages of 10 MiB were 2 GB.
    const { host, executor } = await hostWith(dir, {
      h: hostile([toolWith('busy', {})], {
        busy: {
          progress: [
            { progress: 1, total: 2, repeat: 1_000_000 },
            { progress: -5, total: 2 },
            { progress: 9, total: 2, message: 'done' },
          ],
        },
      }),
    });
    try {
      const seen: ToolProgress[] = [];
      const done = await executor.execute(
        { id: 'p1', name: 'h_busy', arguments: {} },
        { onProgress: (p) => seen.push(p) },
      );
      assert.equal(done.success, true, done.content);
      assert.equal(seen.length, 3);
      assert.ok((seen[0]?.message?.length ?? 0) <= 500, `${seen[0]?.message?.length}`);
      assert.deepEqual(
        seen.map((p) => p.fraction),
        [0.5, 0, 1],
      );
      assert.equal(seen[2]?.message, 'done');
    } finally {
      await host.stop();
    }
  });

  it('backs off a server that exits right after each start: 1 s, then 2 s, not every second for ever', async () => {
    const lines: { msg: string; retry_in_ms?: number }[] = [];
    const logger = pino(
      { level: 'error' },
      { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const [config] = readServers({
      servers: { h: hostile([], {}, { env: { HOSTILE_EXIT_AFTER_LIST: '1' } }) },
    });
    assert.ok(config);
    const server = new McpConnection(config, logger, () => undefined);
    try {
      await server.start();
      const lost = () => lines.filter((l) => l.msg.startsWith('MCP server went away'));
      await waitFor(() => lost().length >= 2, { message: 'it exited twice' });
      assert.deepEqual(
        lost()
          .slice(0, 2)
          .map((l) => l.retry_in_ms),
        [1000, 2000],
      );
    } finally {
      await server.stop();
    }
  });

  it('ends a stdio server’s whole process group when it stops, a child the server started included, and one it started in a session of its own', async () => {
    const pidFile = join(dir, 'child.pid');
    const setsidFile = join(dir, 'setsid-child.pid');
    const { host } = await hostWith(dir, {
      h: hostile(
        [],
        {},
        { env: { HOSTILE_CHILD_PID_FILE: pidFile, HOSTILE_SETSID_CHILD_PID_FILE: setsidFile } },
      ),
    });
    const children = [
      Number(await readFile(pidFile, 'utf8')),
      Number(await readFile(setsidFile, 'utf8')),
    ];
    // Alive and not a zombie waiting to be reaped.
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
      } catch {
        return false;
      }
      try {
        return !/^\S+ \(.*\) Z /s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    try {
      assert.deepEqual(children.map(alive), [true, true]);
      // The second is out of the server's group: a signal to the group never reaches it.
      assert.notEqual(
        execFileSync('ps', ['-o', 'pgid=', '-p', String(children[1])])
          .toString()
          .trim(),
        execFileSync('ps', ['-o', 'pgid=', '-p', String(children[0])])
          .toString()
          .trim(),
      );
      await host.stop();
      await waitFor(() => !children.some(alive), { message: 'the server’s children are gone' });
    } finally {
      for (const pid of children) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('leaves out a tool whose schemas are too large to compile quickly, a name over 128 characters, and tools past the 1,000th, and cuts a long description', async () => {
    // Ajv compiles on the main thread: a 300 KB schema took 6 s, every note waiting meanwhile.
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 1000; i++) properties[`p${i}`] = { type: 'string', minLength: 1 };
    const many = Array.from({ length: 1001 }, (_, i) => ({
      name: `t${i}`,
      inputSchema: { type: 'object' },
    }));
    const { registry, host, executor } = await hostWith(dir, {
      h: hostile([
        toolWith('big', properties),
        toolWith(`long_${'x'.repeat(200)}`, {}),
        toolWith('fine', {}, { description: `${'d'.repeat(5000)}END` }),
        ...many.slice(0, 997),
      ]),
    });
    try {
      assert.equal(registry.has('h_big'), false, 'over 32 KiB of schema');
      assert.equal(
        registry.names().some((n) => n.startsWith('h_long_')),
        false,
        'a name over 128 characters',
      );
      assert.equal(registry.names().filter((n) => n.startsWith('h_t')).length, 997);
      const described = registry.get('h_fine')?.description ?? '';
      assert.match(
        described,
        /^d{4000}… \(cut at 4000 characters\)/,
        'a description over 4,000 characters is cut',
      );
      assert.doesNotMatch(described, /END/);
      assert.equal(
        (await executor.execute({ id: 'b1', name: 'h_fine', arguments: {} })).content,
        'ok',
      );
    } finally {
      await host.stop();
    }
    const { registry: second, host: again } = await hostWith(dir, { h: hostile(many) });
    try {
      assert.equal(second.has('h_t999'), true);
      assert.equal(second.has('h_t1000'), false, 'the 1,001st tool');
    } finally {
      await again.stop();
    }
  });

  it('compiles at most 1 MiB of schemas a listing: the tools past it are left out', async () => {
    // Each under the 32 KiB a tool may take, together over what one listing may: a server that
    // listed a thousand such tools, and said every second that its list changed, kept the main
    // thread compiling.
    // The server's tools, as test/fixtures/mcp/hostile-server.mjs makes them.
    const schema = {
      type: 'object',
      properties: { p: { type: 'string', description: 'x'.repeat(30_000) } },
    };
    const size = JSON.stringify(schema).length + JSON.stringify({}).length;
    const kept = Math.floor((1024 * 1024) / size);
    assert.ok(kept > 30 && kept < 40, `${kept} of 40 fit`);
    const { registry, host } = await hostWith(dir, {
      h: hostile([], {}, { env: { HOSTILE_PADDED_TOOLS: '40:30000' } }),
    });
    try {
      const listed = registry.names().filter((n) => n.startsWith('h_big'));
      assert.equal(listed.length, kept);
      assert.equal(registry.has(`h_big${kept - 1}`), true);
      assert.equal(registry.has(`h_big${kept}`), false);
    } finally {
      await host.stop();
    }
  });

  it('sends nothing more to a stdio server that stops reading, once 16 MiB wait in its input', async () => {
    const { host, executor } = await hostWith(dir, {
      h: hostile(
        [toolWith('sink', { text: { type: 'string' } })],
        {},
        {
          env: {
            HOSTILE_TOOLS: JSON.stringify([toolWith('sink', { text: { type: 'string' } })]),
            HOSTILE_RESULTS: '{}',
            HOSTILE_STOP_READING: '1',
          },
        },
      ),
    });
    try {
      // 5 MiB a call, all at once: the fourth takes what waits past 16 MiB, the rest are refused
      // at once instead of being kept in memory (before: every one kept, until vaultd stopped).
      const text = 'x'.repeat(5 * 1024 * 1024);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          executor.execute({ id: `s${i}`, name: 'h_sink', arguments: { text } }),
        ),
      );
      const refused = results.filter((r) =>
        /has not read the last \d+ MiB/.test(r.error?.message ?? ''),
      );
      assert.ok(refused.length >= 1, JSON.stringify(results.map((r) => r.error?.message)));
      assert.ok(results.every((r) => r.status === 'error'));
      // Never sent, so never acted: the tool is not safe, and a refusal counted as "may have
      // acted" (MCP review).
      for (const r of refused) assert.equal(r.error?.recoverable, true, JSON.stringify(r.error));
    } finally {
      await host.stop();
    }
  });

  it('reads no more than 4 KiB of an HTTP error answer, which the SDK quotes whole in its error', async () => {
    const http = createHttpServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      // 20 MiB, written as it is read.
      let left = 20 * 1024;
      const more = (): void => {
        while (left > 0) {
          left -= 1;
          if (!res.write('e'.repeat(1024))) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    try {
      const failed = await hostWith(dir, { e: { url: `http://127.0.0.1:${port}/mcp` } }).then(
        () => assert.fail('it started'),
        (error: Error) => error,
      );
      assert.match(failed.message, /could not start/);
      assert.ok(failed.message.length < 10_000, `a message of ${failed.message.length} characters`);
    } finally {
      http.closeAllConnections();
      http.close();
    }
  });

  it('compiles an output schema at the tool’s first result, not when the list comes, and never one over 32 KiB', () => {
    // The SDK asks for every output schema of a page of the list in one go on the main thread: a
    // page of large ones held it for seconds, for tools that may never be called.
    const compiled: object[] = [];
    const outputs = makeOutputValidator(() => {
      const compile = makeUntrustedCompiler({ useDefaults: false });
      return (schema) => {
        compiled.push(schema);
        return compile(schema);
      };
    });
    const small = { type: 'object', properties: { n: { type: 'integer' } } };
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 1000; i++) properties[`p${i}`] = { type: 'string', minLength: 1 };
    const check = outputs.getValidator(small);
    const checkLarge = outputs.getValidator({ type: 'object', properties } as JsonSchemaType);
    assert.equal(compiled.length, 0, 'nothing compiled with the list');
    assert.equal(check({ n: 1 }).valid, true);
    assert.match(check({ n: 'x' }).errorMessage ?? '', /must be integer/);
    assert.deepEqual(compiled, [small]);
    assert.match(checkLarge({}).errorMessage ?? '', /larger than the 32768 characters/);
    assert.equal(compiled.length, 1, 'the large one is never compiled');
  });
});

describe('mcp pack end to end from notes', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  before(async () => {
    vault = await makeVault();
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        [
          'tools:',
          '  mcp:',
          '    servers:',
          '      everything:',
          `        command: ${process.execPath}`,
          `        args: [${EVERYTHING}, stdio]`,
          '        tools:',
          "          'get-sum': safe",
          '    limits:',
          '      everything_trigger_long_running_operation: { timeout_ms: 1500 }',
          '',
        ].join('\n'),
    );
    daemon = await startDaemon(vault);
  });
  after(async () => {
    const code = await stopDaemon(daemon);
    assert.equal(code, 0, daemon.output().slice(-2000));
    await vault.cleanup();
  });

  it('runs a safe MCP tool at once and puts a dangerous one before a human', async () => {
    await vault.drop(
      'mcp.md',
      note(
        'MCP',
        callBlock('everything_get_sum', { a: 20, b: 22 }, 'sum'),
        callBlock('everything_get_structured_content', { location: 'Chicago' }, 'weather'),
      ),
    );
    const pending = await waitPending(vault, 'mcp.md');
    assert.match(pending, /everything_get_structured_content/);
    assert.match(resultsOf(pending)[0]?.content ?? '', /42/);
    await moveNote(vault, 'mcp.md', 'Pending_Approval', 'Approved');
    const done = await waitInFolder(vault, 'mcp.md', 'Done');
    const weather = resultsOf(done).find((r) => r.id === 'weather');
    assert.equal(weather?.status, 'success');
    assert.equal((weather?.data as { conditions?: string }).conditions !== undefined, true);
  });

  it('gives a schema violation and a hung tool clear results', async () => {
    await vault.drop(
      'bad.md',
      note(
        'Bad',
        callBlock('everything_get_sum', { a: 'twenty' }, 'bad-sum'),
        callBlock('everything_trigger_long_running_operation', { duration: 30, steps: 30 }, 'hang'),
      ),
    );
    const pending = await waitPending(vault, 'bad.md');
    assert.equal(resultsOf(pending).find((r) => r.id === 'bad-sum')?.error?.code, 'INVALID_PARAMS');
    await moveNote(vault, 'bad.md', 'Pending_Approval', 'Approved');
    const failed = await waitInFolder(vault, 'bad.md', 'Failed');
    assert.equal(resultsOf(failed).find((r) => r.id === 'hang')?.error?.code, 'TIMEOUT');
  });

  it('lists the proxied tools in the MCP export of vaultd tools', async () => {
    const out = await runCli(['tools', '--format', 'mcp', '--config', vault.configPath]);
    assert.equal(out.code, 0, out.stderr);
    const tools = JSON.parse(out.stdout) as {
      name: string;
      annotations: { destructiveHint: boolean };
    }[];
    const sum = tools.find((t) => t.name === 'everything_get_sum');
    assert.ok(sum);
    assert.equal(sum.annotations.destructiveHint, false);
    assert.equal(
      tools.find((t) => t.name === 'everything_get_env')?.annotations.destructiveHint,
      true,
    );
  });
});
