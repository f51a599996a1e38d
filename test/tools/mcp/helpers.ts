// Helpers of the mcp pack's tests: hostile server configs, MCP servers over Streamable HTTP, and a
// pack host with an executor.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ApprovalGate } from '../../../src/approval/gate.ts';
import { compilePolicy } from '../../../src/approval/policy.ts';
import { loadConfig } from '../../../src/config/index.ts';
import { Executor } from '../../../src/execute/index.ts';
import { silentLogger } from '../../../src/observe/logger.ts';
import { ToolRegistry } from '../../../src/protocol/index.ts';
import { PackHost, packConfigSchemas } from '../../../src/tools/host.ts';
import { BUILTIN_PACKS } from '../../../src/tools/index.ts';
import { ensureLayout, resolveLayout } from '../../../src/vault/index.ts';
import { ROOT } from '../../helpers/vault.ts';
import { waitFor } from '../../helpers/wait-for.ts';

export const EVERYTHING = join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);
export const HOSTILE = join(ROOT, 'test/fixtures/mcp/hostile-server.mjs');

/** The config of a hostile stdio server with this tool list and these answers (see the fixture). */
export function hostile(
  tools: unknown[],
  results: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    command: process.execPath,
    args: [HOSTILE],
    env: { HOSTILE_TOOLS: JSON.stringify(tools), HOSTILE_RESULTS: JSON.stringify(results) },
    tools: { '*': 'safe' },
    ...extra,
  };
}

/** A tool declaration as a server sends it: an object input schema with these properties. */
export function toolWith(name: string, properties: Record<string, unknown>, more = {}): object {
  return { name, inputSchema: { type: 'object', properties }, ...more };
}

/** A port free on 127.0.0.1 now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/**
 * Start an MCP server over Streamable HTTP on `port` (default a free one); it prints "listening"
 * when ready.
 */
export async function httpServer(
  args: string[],
  env: Record<string, string> = {},
  port?: number,
): Promise<{ server: ChildProcess; url: string }> {
  port ??= await freePort();
  const server: ChildProcess = spawn(process.execPath, args, {
    env: { PATH: process.env['PATH'] ?? '', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  server.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  try {
    await waitFor(() => log.includes('listening'), { message: 'the HTTP server is up' });
  } catch (error) {
    server.kill('SIGKILL');
    throw error;
  }
  return { server, url: `http://127.0.0.1:${port}/mcp` };
}

/** A pack host with the mcp pack on these servers, and an executor that runs what policy allows. */
export async function hostWith(
  dir: string,
  servers: Record<string, unknown>,
  allow: string[] = [],
  timeoutMs = 5000,
) {
  const config = loadConfig({ vault: dir, env: {}, toolSchemas: packConfigSchemas(BUILTIN_PACKS) });
  const withServers = { ...config, tools: { mcp: { servers } } };
  const layout = resolveLayout(withServers);
  await ensureLayout(layout);
  const registry = new ToolRegistry();
  const host = new PackHost({
    packs: BUILTIN_PACKS,
    config: withServers,
    layout,
    registry,
    logger: silentLogger(),
  });
  await host.start();
  const executor = new Executor(registry, {
    gate: new ApprovalGate({ policy: compilePolicy({ allow }) }),
    runtime: (tool) => host.runtime(tool),
    timeoutMs,
    retry: { attempts: 1, baseDelayMs: 1 },
  });
  return { registry, host, executor };
}
