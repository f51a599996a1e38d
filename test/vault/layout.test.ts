import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CONFIG_DEFAULTS } from '../../src/config/index.ts';
import { ensureLayout, resolveLayout, toVaultPath } from '../../src/vault/index.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'vaultd-layout-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('resolveLayout and ensureLayout', () => {
  it('resolves configured names to absolute folders and creates them all', async () => {
    const layout = resolveLayout({
      vault: root,
      folders: { ...CONFIG_DEFAULTS.folders, done: 'Archive/Done' },
    });
    assert.equal(layout.inbox, join(root, 'Needs_Action'));
    assert.equal(layout.inProgress, join(root, 'In_Progress'));
    assert.equal(layout.done, join(root, 'Archive', 'Done'));
    assert.equal(layout.state, join(root, '.vaultd'));
    await ensureLayout(layout);
    await ensureLayout(layout);
    for (const dir of Object.values(layout)) assert.ok((await stat(dir)).isDirectory(), dir);
    assert.deepEqual((await readdir(root)).sort(), [
      '.vaultd',
      'Approved',
      'Archive',
      'Failed',
      'In_Progress',
      'Logs',
      'Needs_Action',
      'Outbox',
      'Pending_Approval',
      'Rejected',
    ]);
    assert.equal(toVaultPath(layout, join(layout.inProgress, 'task.md')), 'In_Progress/task.md');
  });
});
