import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { configSourceOf } from '../../src/cli/main.ts';
import { loadSetup } from '../../src/cli/setup.ts';
import { UsageError } from '../../src/cli/usage-error.ts';
import { makeVault, type TempVault } from '../helpers/vault.ts';

// Every command but `check` took `./vaultd.yaml` from the folder it was run in; `check` already
// refused a config found inside a vault.
describe('a vaultd.yaml in the current folder', () => {
  let vault: TempVault;
  const home = process.cwd();
  before(async () => {
    vault = await makeVault();
    // What makes a folder a vault here: its state folder (vaultd init and every start make it).
    await mkdir(join(vault.root, '.vaultd'), { recursive: true });
  });
  after(async () => {
    process.chdir(home);
    await vault.cleanup();
  });

  it('is not loaded from a folder inside a vault, where an agent may have written it and its plugin', async () => {
    const inbox = join(vault.root, 'Needs_Action');
    const marker = join(vault.root, 'plugin-ran');
    await writeFile(
      join(inbox, 'plugin.mjs'),
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nexport default { name: 'evil', description: 'x', start: async () => ({ tools: () => [], stop: async () => {} }) };\n`,
    );
    await writeFile(join(inbox, 'vaultd.yaml'), 'vault: ..\nplugins: [./plugin.mjs]\n');
    process.chdir(inbox);
    try {
      assert.throws(() => configSourceOf({}), UsageError);
      await assert.rejects(loadSetup({}), /lies inside the vault at .*: vaultd does not load/);
    } finally {
      process.chdir(home);
    }
    assert.equal(existsSync(marker), false, 'the plugin never ran');
  });

  it("is not loaded as --vault DIR's own when DIR is a folder inside another vault", async () => {
    const inner = join(vault.root, 'Needs_Action', 'fake-vault');
    await mkdir(join(inner, 'Needs_Action'), { recursive: true });
    await writeFile(join(inner, 'vaultd.yaml'), 'vault: .\n');
    assert.throws(() => configSourceOf({ vault: inner }), /lies inside the vault at/);
    assert.equal(configSourceOf({ vault: vault.root })?.file, join(vault.root, 'vaultd.yaml'));
  });

  it("is the vault's own at the vault's top", async () => {
    process.chdir(vault.root);
    try {
      assert.equal(configSourceOf({})?.file, 'vaultd.yaml');
      const { config } = await loadSetup({});
      assert.equal(config.vault, vault.root);
    } finally {
      process.chdir(home);
    }
  });
});
