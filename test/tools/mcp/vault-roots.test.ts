// A stdio MCP server given the vault (or a folder above it) acts on vaultd's state, folders and
// config as vaultd's user, beyond vaultd's checks: the pack says so in the log at start.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { pino } from 'pino';
import { readServers } from '../../../src/tools/mcp/config.ts';
import { warnOfVaultRoots } from '../../../src/tools/mcp/index.ts';

it('warns of a stdio server given the vault or a folder above it, and of no other', () => {
  const lines: { msg: string; server?: string }[] = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
  );
  const servers = readServers({
    servers: {
      whole: { command: '/usr/bin/node', args: ['/opt/fs/index.js', '/srv/vault'] },
      above: { command: '/usr/bin/node', args: ['/opt/fs/index.js', '--root=/srv'] },
      cwd: { command: '/usr/bin/node', args: ['/opt/fs/index.js'], cwd: '/srv/vault/' },
      own: { command: '/usr/bin/node', args: ['/opt/fs/index.js', '/srv/vault/Shared'] },
      other: { command: '/usr/bin/node', args: ['/opt/fs/index.js', '/srv/vault2'] },
      remote: { url: 'http://127.0.0.1:3001/mcp' },
    },
  });
  const warned = warnOfVaultRoots(servers, '/srv/vault', logger);
  assert.deepEqual(warned.sort(), ['above', 'cwd', 'whole']);
  assert.equal(lines.length, 3);
  assert.match(lines[0]?.msg ?? '', /folder of its own/);
});
