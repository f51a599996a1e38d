// A slow file system pauses the note path's synchronous fast path; the daemon says so once at the
// warn level (later pauses at debug), and stops listening when it stops.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config/load-config.ts';
import { startDaemon } from '../../src/daemon.ts';
import { ToolRegistry } from '../../src/protocol/index.ts';
import { configureFastPath, noteSyncCall } from '../../src/vault/fs-calls.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vaultd-slow-files-'));
});
after(async () => {
  configureFastPath();
  await rm(dir, { recursive: true, force: true });
});

describe('a slow file system', () => {
  it('is named once in a warning, later pauses at debug, none after the stop', async () => {
    const lines: { level: number; msg: string; average_ms?: number }[] = [];
    const logger = pino(
      { level: 'debug' },
      { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const config = loadConfig({ vault: join(dir, 'vault'), env: {} });
    const daemon = await startDaemon({
      config,
      registry: new ToolRegistry(),
      logger,
      watch: false,
    });
    const slow = (): typeof lines =>
      lines.filter((line) => line.msg.includes('file system answered slowly'));
    try {
      configureFastPath();
      for (let i = 0; i < 10; i++) noteSyncCall(3);
      configureFastPath();
      for (let i = 0; i < 10; i++) noteSyncCall(3);
      assert.equal(slow().length, 2);
      assert.equal(slow()[0]?.level, 40, 'the first at warn');
      assert.ok((slow()[0]?.average_ms ?? 0) > 1);
      assert.equal(slow()[1]?.level, 20, 'later ones at debug');
    } finally {
      await daemon.stop();
    }
    configureFastPath();
    for (let i = 0; i < 10; i++) noteSyncCall(3);
    assert.equal(slow().length, 2, 'nothing logged after the stop');
  });
});
