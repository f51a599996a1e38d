import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_DEFAULTS } from '../../src/config/defaults.ts';
import { takeVaultSnapshot } from '../../src/observe/vault-snapshot.ts';
import { ensureLayout, resolveLayout } from '../../src/vault/layout.ts';

describe('takeVaultSnapshot', { timeout: 20_000 }, () => {
  it('lists pending calls, never reads a note past the cap, and never waits on a fifo', async () => {
    const root = mkdtempSync(join(tmpdir(), 'vaultd-snapshot-'));
    try {
      const layout = resolveLayout({ vault: root, folders: CONFIG_DEFAULTS.folders });
      await ensureLayout(layout);
      const section =
        '# Ask\n\n## Approval\n\n### bench_echo · `call_000000000001`\n- [ ] approve\n';
      writeFileSync(join(layout.pending, 'ask.md'), section);
      // A file of any size an agent put there would be read whole at every refresh.
      writeFileSync(join(layout.pending, 'huge.md'), section + 'x'.repeat(10_000));
      execFileSync('mkfifo', [join(layout.pending, 'pipe.md')]);
      const calls = (snapshot: Awaited<ReturnType<typeof takeVaultSnapshot>>) =>
        Object.fromEntries(snapshot.pending.map((p) => [p.note, p.calls.map((c) => c.id)]));
      const all = await takeVaultSnapshot(layout);
      assert.deepEqual(calls(all), {
        'ask.md': ['call_000000000001'],
        'huge.md': ['call_000000000001'],
      });
      // Counted by name (one listing, no stat): the fifo is among them.
      assert.equal(all.notes['pending_approval'], 3);
      const capped = await takeVaultSnapshot(layout, undefined, undefined, 1_000);
      assert.deepEqual(calls(capped), { 'ask.md': ['call_000000000001'], 'huge.md': [] });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
