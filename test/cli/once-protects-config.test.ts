import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { callBlock, makeVault, note, resultsOf, runCli, type TempVault } from '../helpers/vault.ts';

// `vaultd once` runs the daemon with a copy of the config (its HTTP port off); the copy must still
// be known as loaded from its file, or the tools are not kept from reading and writing that file.
describe('vaultd once keeps the config file out of the tools’ reach, as run does', () => {
  let vault: TempVault;
  before(async () => {
    vault = await makeVault('tools:\n  filesystem:\n    enabled: true\n    protected: []\n');
  });
  after(async () => {
    await vault.cleanup();
  });

  it('refuses read_file and file_info of the config file it was started with', async () => {
    await vault.drop(
      'peek.md',
      note(
        'Peek',
        callBlock('read_file', { path: 'vaultd.yaml' }, 'read'),
        callBlock('file_info', { path: 'vaultd.yaml' }, 'info'),
      ),
    );
    const res = await runCli(['once', '--config', vault.configPath, '--no-progress']);
    assert.equal(res.code, 0, res.stderr);
    const results = resultsOf(await vault.read('Failed', 'peek.md'));
    const read = results.find((r) => r.id === 'read');
    assert.equal(read?.status, 'error', read?.content);
    assert.equal(read?.error?.code, 'PERMISSION_DENIED');
    assert.doesNotMatch(read?.content ?? '', /reconcile_cron/);
    const info = results.find((r) => r.id === 'info');
    assert.equal(info?.error?.code, 'PERMISSION_DENIED', info?.content);
  });
});
