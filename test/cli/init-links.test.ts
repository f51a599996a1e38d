import assert from 'node:assert/strict';
import { lstat, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runInit } from '../../src/cli/commands/init.ts';

// `vaultd init` run again on a vault rewrites TOOLS.md, at the vault's top level, where agents
// that can write the vault can put a link.
describe('vaultd init on a vault whose TOOLS.md is a link', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-init-link-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('replaces the link and leaves the file it points at as it was', async () => {
    const vault = join(dir, 'vault');
    const outside = join(dir, 'precious.txt');
    await writeFile(outside, 'the operator’s own file\n');
    const write = process.stdout.write;
    process.stdout.write = () => true;
    try {
      await runInit(vault);
      await rm(join(vault, 'TOOLS.md'));
      await symlink(outside, join(vault, 'TOOLS.md'));
      await runInit(vault);
    } finally {
      process.stdout.write = write;
    }
    assert.equal(await readFile(outside, 'utf8'), 'the operator’s own file\n');
    const tools = await lstat(join(vault, 'TOOLS.md'));
    assert.ok(tools.isFile() && !tools.isSymbolicLink(), 'TOOLS.md is a file of its own');
    assert.match(await readFile(join(vault, 'TOOLS.md'), 'utf8'), /^# Tools for agents/);
  });
});
