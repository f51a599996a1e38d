// Issue 14, attack 4: a note replaced by a symbolic link (or a hard link to a file outside the
// vault) while its calls run must not make vaultd write through the link; a hard-linked note in
// the inbox is refused.
import assert from 'node:assert/strict';
import { link, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  claimedPath,
  note,
  startPluginDaemon,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('no writes through links', { timeout: 60_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let outside: string;

  before(async () => {
    ({ vault, daemon } = await startPluginDaemon());
    outside = await mkdtemp(join(tmpdir(), 'vaultd-outside-'));
  });
  after(async () => {
    await daemon.stop();
    await vault.cleanup();
    await rm(outside, { recursive: true, force: true });
  });

  for (const kind of ['symbolic', 'hard'] as const) {
    it(`writes nothing through a ${kind} link put in place of a note while its call runs`, async () => {
      const target = join(outside, `${kind}-target.txt`);
      await writeFile(target, 'precious\n');
      const name = `${kind}.md`;
      // A text of its own: the same read-only call would be answered from the executor's cache
      // at once, before the test could swap the note.
      await vault.drop(
        name,
        note('Swap', callBlock('slow_echo', { text: `slow ${kind}`, ms: 1500 })),
      );
      const claimed = await waitFor(() => claimedPath(vault, name));
      const swap = join(vault.root, `.swap-${kind}`);
      if (kind === 'symbolic') await symlink(target, swap);
      else await link(target, swap);
      await rename(swap, claimed);
      // vaultd must refuse to write through it: when it comes to write the result (the usual
      // case), or already when it reads the claimed note back, if the swap beat that read (a
      // busy machine); appending the error there never follows a link either.
      await waitFor(
        () =>
          daemon.output().includes('note changed into something unreadable') ||
          daemon.output().includes('claimed note is not a readable note'),
        { message: 'the write-back refused' },
      );
      assert.equal(await readFile(target, 'utf8'), 'precious\n');
    });
  }

  it('refuses a note that is a hard link to another file, and never writes into it', async () => {
    const target = join(outside, 'linked-target.md');
    await writeFile(target, note('Linked', callBlock('slow_echo', { text: 'x' })));
    const before = await readFile(target, 'utf8');
    await link(target, join(vault.root, 'Needs_Action', 'linked.md'));
    await waitFor(() => daemon.output().includes('several hard links'), { message: 'refused' });
    assert.equal(await readFile(target, 'utf8'), before);
  });
});
