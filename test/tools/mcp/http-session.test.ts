// A Streamable HTTP server that restarts no longer knows vaultd's session and refuses every request
// made with it (404, as the MCP specification says, or 400 as the SDK's example servers answer).
// The SDK's transport neither closes nor starts a new session: vaultd stayed "up", every call
// failed for ever, and each dangerous one was recorded as may-have-acted.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../../helpers/vault.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { EVERYTHING, freePort, hostWith, httpServer } from './helpers.ts';

const SESSION = join(ROOT, 'test/fixtures/mcp/session-http-server.mjs');

async function restart(
  server: ChildProcess,
  args: string[],
  env: Record<string, string>,
  port: number,
): Promise<ChildProcess> {
  const gone = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGKILL');
  await gone;
  return (await httpServer(args, env, port)).server;
}

describe('an MCP server over HTTP that restarts', { timeout: 120_000 }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-mcp-session-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const cases = [
    {
      label: '404 (the specification)',
      args: [SESSION],
      env: {},
      tool: 'count',
      expect: /calls: 1/,
    },
    {
      label: '400 "No valid session ID provided" (the reference server)',
      args: [EVERYTHING, 'streamableHttp'],
      env: {},
      tool: 'get-sum',
      expect: /3/,
    },
  ];
  for (const { label, args, env, tool, expect } of cases) {
    it(`answering ${label}: the call is reported as not sent, and vaultd starts a new session`, async () => {
      const port = await freePort();
      const started = await httpServer(args, env, port);
      let server = started.server;
      const url = started.url;
      try {
        const name = `s_${tool.replace('-', '_')}`;
        // Dangerous (the default), allowed by policy: its result says whether it may have acted.
        const { host, executor } = await hostWith(dir, { s: { url } }, [name]);
        const call = (id: string) =>
          executor.execute({ id, name, arguments: tool === 'count' ? {} : { a: 1, b: 2 } });
        try {
          assert.equal((await call('r1')).success, true);
          server = await restart(server, args, env, port);
          const refused = await call('r2');
          assert.equal(refused.success, false);
          assert.match(refused.error?.message ?? '', /no longer knows vaultd's session/);
          assert.equal(refused.error?.recoverable, true, 'it may be tried again');
          assert.equal(refused.metadata.may_have_acted, false, 'it never reached the server');
          const again = await waitFor(
            async () => {
              const r = await call('r3');
              return r.success ? r : undefined;
            },
            { message: 'a call works on a new session', timeoutMs: 30_000 },
          );
          // The refused call never ran: the restarted server's first call is this one.
          assert.match(again.content, expect);
        } finally {
          await host.stop();
        }
      } finally {
        server.kill('SIGKILL');
      }
    });
  }
});
