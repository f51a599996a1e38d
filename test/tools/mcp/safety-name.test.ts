// A server's tool is named in vaultd by its normalised name (`Delete-File` of server `files` is
// `files_delete_file`); the `tools` globs of its config matched only the server's own spelling, so
// `delete_file: dangerous` let `Delete_File` or `delete-file` run at the server's default level.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { safetyOf } from '../../../src/tools/mcp/adapt-tool.ts';
import type { McpServerConfig } from '../../../src/tools/mcp/config.ts';
import type { SafetyLevel } from '../../../src/protocol/types.ts';
import { hostile, hostWith, toolWith } from './helpers.ts';

function server(tools: Record<string, SafetyLevel>, safety: SafetyLevel): McpServerConfig {
  return {
    name: 'files',
    args: [],
    env: {},
    headers: {},
    prefix: 'files',
    safety,
    tools,
    connectTimeoutMs: 1000,
  };
}

describe('MCP tool levels by name', { timeout: 60_000 }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-mcp-safety-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const rules = { delete_file: 'dangerous', 'write_*': 'dangerous', 'read_*': 'safe' } as const;
  const table: [string, Record<string, SafetyLevel>, SafetyLevel, SafetyLevel][] = [
    ['delete_file', rules, 'safe', 'dangerous'],
    ['Delete_File', rules, 'safe', 'dangerous'],
    ['delete-file', rules, 'safe', 'dangerous'],
    ['DELETE FILE', rules, 'safe', 'dangerous'],
    ['Write-File', rules, 'safe', 'dangerous'],
    ['Read-File', rules, 'dangerous', 'safe'],
    ['list', rules, 'cautious', 'cautious'],
    // Both spellings match, different rules: the stricter level, whichever rule comes first.
    ['Read-File', { 'Read-File': 'safe', read_file: 'cautious' }, 'safe', 'cautious'],
    ['Read-File', { read_file: 'dangerous', 'Read-*': 'safe' }, 'safe', 'dangerous'],
    ['Read-File', { 'Read-*': 'cautious', '*': 'safe' }, 'safe', 'cautious'],
  ];
  for (const [name, tools, fallback, level] of table) {
    it(`gives ${name} under ${JSON.stringify(tools)} the level ${level}`, () => {
      assert.equal(safetyOf(server(tools, fallback), name), level);
    });
  }

  it('declares a tool whose name the server spells otherwise at the configured level', async () => {
    const { registry, host } = await hostWith(dir, {
      files: hostile(
        [toolWith('Delete_File', {}), toolWith('write-file', {})],
        {},
        {
          safety: 'safe',
          tools: { delete_file: 'dangerous', 'write_*': 'dangerous' },
        },
      ),
    });
    try {
      assert.equal(registry.get('files_delete_file')?.safety, 'dangerous');
      assert.equal(registry.get('files_write_file')?.safety, 'dangerous');
    } finally {
      await host.stop();
    }
  });
});
