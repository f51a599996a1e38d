// Red-team findings F4 and F4c, replayed against a running daemon: an agent that can write the
// vault plants today's execution-log file as a link to a file outside the vault, or replaces Done/
// with a link to a folder outside it. vaultd appended its log lines (quoting the agent's
// arguments) to the outside file and moved finished notes out of the vault.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
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

describe("no writes through links put in place of vaultd's folders", { timeout: 60_000 }, () => {
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

  it("appends nothing to a file outside the vault linked as today's execution log", async () => {
    const victim = join(outside, 'bashrc');
    await writeFile(victim, '# outside the vault\n');
    const day = new Date().toISOString().slice(0, 10);
    await mkdir(join(vault.root, 'Logs'), { recursive: true });
    await symlink(victim, join(vault.root, 'Logs', `${day}.jsonl`));
    await vault.drop('log.md', note('Log', callBlock('slow_echo', { text: '$(touch pwned)' })));
    await waitFor(async () => (await vault.whereIs('log.md')) === 'Done');
    await waitFor(() => daemon.output().includes('was a symbolic link'), {
      message: 'the link reported in the daemon log',
    });
    assert.equal(await readFile(victim, 'utf8'), '# outside the vault\n');
    // The log went on in a fresh file of the day, the link set aside.
    await waitFor(async () =>
      (await readFile(join(vault.root, 'Logs', `${day}.jsonl`), 'utf8')).includes('touch pwned'),
    );
  });

  it('reads nothing from outside when the inbox is a link, says so once, and reads it again once fixed', async () => {
    // Review finding: vaultd checked the folder a note goes to, never the one it came from; an
    // inbox replaced with a link to a folder of the user's had its notes claimed, rewritten with
    // results and filed under Done/, where the agent could read them.
    const inbox = join(vault.root, 'Needs_Action');
    const users = await mkdtemp(join(tmpdir(), 'vaultd-users-'));
    try {
      const text = note('Private', callBlock('slow_echo', { text: "the user's own" }));
      await writeFile(join(users, 'private.md'), text);
      await rm(inbox, { recursive: true });
      await symlink(users, inbox);
      await waitFor(
        () => /a folder vaultd takes notes from is a symbolic link/.test(daemon.output()),
        {
          message: 'the refusal',
        },
      );
      // Two more reconcile scans (every 2 s here): still untouched, and said once.
      await new Promise((resolve) => setTimeout(resolve, 4500));
      assert.equal(await readFile(join(users, 'private.md'), 'utf8'), text);
      assert.deepEqual(await readdir(users), ['private.md']);
      for (const folder of ['In_Progress', 'Done', 'Failed'])
        assert.deepEqual(
          (await readdir(join(vault.root, folder))).filter((n) => n.startsWith('private')),
          [],
          folder,
        );
      assert.equal(
        daemon.output().match(/a folder vaultd takes notes from is a symbolic link/g)?.length,
        1,
      );
      await rm(inbox);
      await mkdir(inbox);
      await waitFor(() => /the folder is a real folder again/.test(daemon.output()), {
        message: 'the folder read again',
      });
    } finally {
      await rm(users, { recursive: true, force: true });
    }
  });

  it('leaves a finished note in In_Progress while Done/ is a link, and moves it once fixed', async () => {
    const done = join(vault.root, 'Done');
    await rm(done, { recursive: true });
    await symlink(outside, done);
    await vault.drop('moved.md', note('Moved', callBlock('slow_echo', { text: 'x' })));
    await waitFor(() => /Done is a symbolic link/.test(daemon.output()), {
      message: 'the refusal, naming the folder',
    });
    assert.ok(await claimedPath(vault, 'moved.md'), 'the note waits in In_Progress');
    assert.deepEqual(
      (await readdir(outside)).filter((n) => n.endsWith('.md')),
      [],
    );
    await rm(done);
    await mkdir(done);
    await waitFor(async () => (await vault.whereIs('moved.md')) === 'Done', {
      timeoutMs: 20_000,
      message: 'the note moved on once Done/ is a folder again',
    });
  });
});
