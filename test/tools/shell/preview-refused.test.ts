// A shell call whose working directory no call may use says so in its preview.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { callBlock, makeVault, note, runCli, type TempVault } from '../../helpers/vault.ts';

describe('shell preview of a refused working directory', { timeout: 60_000 }, () => {
  let vault: TempVault;
  before(async () => {
    vault = await makeVault('tools:\n  shell:\n    enabled: true\n');
  });
  after(async () => {
    await vault.cleanup();
  });

  it('tells the human the call will fail, not that the folder is writable', async () => {
    await vault.drop(
      'out.md',
      note('Out', callBlock('shell_exec', { command: 'pwd', cwd: '../' }, 'o1')),
    );
    const res = await runCli(['once', '--config', vault.configPath, '--no-progress']);
    assert.equal(res.code, 0, res.stderr);
    const pending = await vault.read('Pending_Approval', 'out.md');
    assert.match(pending, /> This call will fail: .* is outside the folders this tool may touch/);
    assert.doesNotMatch(pending, /refused: .*\(writable;/);
  });
});
