// Issue 13: faults injected into a real daemon process (kill -9 at random moments of bursts, an
// editor saving a note three times in a row, the state folder deleted under a running daemon),
// counting every execution of a side-effecting tool in a log outside vaultd's control. The
// promise: no note lost, no call run twice, nothing stuck once the fault is over. CI runs a short
// budget; `npm run chaos` runs the full one (CHAOS_ROUNDS, CHAOS_NOTES).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  startCli,
  startPluginDaemon,
  STATE_FOLDERS,
  TEST_PLUGIN,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';

const ROUNDS = Number(process.env['CHAOS_ROUNDS'] ?? 5);
const NOTES = Number(process.env['CHAOS_NOTES'] ?? 10);

/** A seeded random generator, so a failing run can be replayed with CHAOS_SEED. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

async function starts(sideLog: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (!existsSync(sideLog)) return counts;
  for (const line of (await readFile(sideLog, 'utf8')).split('\n')) {
    const label = /^start (.+)$/.exec(line)?.[1];
    if (label !== undefined) counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return counts;
}

/** Every `.md` note in the state folders, by folder. */
async function census(vault: TempVault): Promise<Map<string, string[]>> {
  const where = new Map<string, string[]>();
  for (const folder of STATE_FOLDERS) {
    if (!existsSync(join(vault.root, folder))) continue;
    for (const name of await readdir(join(vault.root, folder))) {
      if (name.endsWith('.md')) where.set(name, [...(where.get(name) ?? []), folder]);
    }
  }
  return where;
}

describe('fault injection: a real daemon, real kills', { timeout: 600_000 }, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const clean of cleanups.reverse()) await clean().catch(() => undefined);
  });

  /** Start a second daemon on the vault: 'ready' if it came up beside the first, else how it ended. */
  const startSecond = async (vault: TempVault): Promise<string> => {
    const second = startCli(['run', '--config', vault.configPath]);
    cleanups.push(() => second.stop());
    const outcome = await Promise.race([
      second.exited.then((code) => `exited ${code}`),
      second.ready().then(() => 'ready'),
    ]).catch((error: Error) => error.message);
    if (outcome !== 'ready') await second.exited;
    return outcome;
  };

  it(`kill -9 at random moments of ${ROUNDS} bursts: nothing lost, nothing run twice, nothing stuck`, async () => {
    const random = seeded(Number(process.env['CHAOS_SEED'] ?? 7));
    const started = await startPluginDaemon();
    const { vault, sideLog } = started;
    let daemon: DaemonProcess = started.daemon;
    cleanups.push(
      () => vault.cleanup(),
      () => daemon.stop(),
    );
    const dropped: string[] = [];
    let kills = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const drops: Promise<unknown>[] = [];
      for (let i = 0; i < NOTES; i++) {
        const name = `r${round}-n${i}.md`;
        dropped.push(name);
        const ms = Math.floor(random() * 40);
        // Half with explicit ids, half with derived ones: both kinds of ledger key.
        const explicit = i % 2 === 0;
        drops.push(
          vault.drop(
            name,
            note(
              `Round ${round} note ${i}`,
              callBlock(
                'side_effect',
                { label: `${name}#1`, ms },
                explicit ? `c${round}x${i}a` : undefined,
              ),
              callBlock(
                'side_effect',
                { label: `${name}#2`, ms },
                explicit ? `c${round}x${i}b` : undefined,
              ),
            ),
          ),
        );
      }
      await Promise.all(drops);
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 600)));
      daemon.child.kill('SIGKILL');
      await daemon.exited;
      kills++;
      daemon = startCli(['run', '--config', vault.configPath]);
      await daemon.ready();
    }
    // After the last restart, everything settles.
    await waitFor(
      async () => {
        const where = await census(vault);
        return dropped.every((name) => {
          const folders = where.get(name) ?? [];
          return folders.length > 0 && folders.every((f) => f === 'Done' || f === 'Failed');
        });
      },
      { timeoutMs: 120_000, message: 'every note in Done/ or Failed/' },
    ).catch(async (error: unknown) => {
      const where = await census(vault);
      const stuck = dropped.filter(
        (n) => !(where.get(n) ?? []).every((f) => f === 'Done' || f === 'Failed') || !where.has(n),
      );
      const inProgress = existsSync(join(vault.root, 'In_Progress'))
        ? await readdir(join(vault.root, 'In_Progress'))
        : [];
      if (process.env['CHAOS_LOG'] !== undefined)
        await writeFile(process.env['CHAOS_LOG'], daemon.output());
      const first = stuck[0];
      const folder = first === undefined ? undefined : where.get(first)?.[0];
      const sample =
        first === undefined || folder === undefined ? '' : await vault.read(folder, first);
      throw new Error(
        `${sample}\n${(error as Error).message}; stuck: ${stuck.map((n) => `${n} in ${(where.get(n) ?? []).join('+') || 'nowhere'}`).join(', ')}; In_Progress: ${inProgress.join(', ')}\n${daemon.output().slice(-3000)}`,
      );
    });
    const where = await census(vault);
    const counts = await starts(sideLog);
    let runs = 0;
    let interrupted = 0;
    for (const name of dropped) {
      const folders = where.get(name) ?? [];
      assert.equal(folders.length, 1, `${name} is in exactly one place: ${folders.join(', ')}`);
      const folder = folders[0] as string;
      const results = resultsOf(await vault.read(folder, name));
      assert.equal(results.length, 2, `${name} has both results`);
      for (const [i, result] of results.entries()) {
        const label = `${name}#${i + 1}`;
        const ran = counts.get(label) ?? 0;
        assert.ok(ran <= 1, `${label} ran ${ran} times`);
        if (result.status === 'success') assert.equal(ran, 1, `${label} succeeded, so it ran`);
        else assert.equal(result.status, 'interrupted', `${label}: ${result.status}`);
        if (result.status === 'interrupted') interrupted++;
        runs += ran;
      }
    }
    // Nothing is left behind in the inbox or In_Progress/, and no suffixed duplicate appeared.
    const extra = [...where.keys()].filter((n) => !dropped.includes(n));
    assert.deepEqual(extra, [], 'no note appeared twice under another name');
    const leftovers = (await readdir(vault.root)).filter((n) => n.includes('.tmp'));
    assert.deepEqual(leftovers, [], 'no temp file left behind');
    process.stdout.write(
      `# chaos: ${kills} kills, ${dropped.length} notes, ${dropped.length * 2} calls, ${runs} executions, ${interrupted} interrupted, 0 lost, 0 twice\n`,
    );
  });

  it('an editor saving a note three times within 300 ms runs its calls once', async () => {
    const { vault, daemon, sideLog } = await startPluginDaemon();
    cleanups.push(
      () => vault.cleanup(),
      () => daemon.stop(),
    );
    const path = join(vault.root, 'Needs_Action', 'saved.md');
    const text = note('Saved', callBlock('side_effect', { label: 'saved' }));
    // Temp file and rename, as many editors save.
    for (let i = 0; i < 3; i++) {
      const tmp = join(vault.root, `.saved-${i}.tmp`);
      await writeFile(tmp, `${text}\n<!-- save ${i} -->\n`.repeat(1));
      await rename(tmp, path);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await waitFor(async () => (await vault.list('Done')).length > 0 && !existsSync(path), {
      message: 'the note done',
    });
    await waitFor(async () => (await vault.list('In_Progress')).length === 0);
    assert.equal((await starts(sideLog)).get('saved'), 1, 'the call ran once');
  });

  it('the state folder deleted under a running daemon: no second daemon, no call run twice', async () => {
    const { vault, daemon, sideLog } = await startPluginDaemon();
    cleanups.push(
      () => vault.cleanup(),
      () => daemon.stop(),
    );
    for (let i = 0; i < 5; i++) {
      await vault.drop(
        `gone-${i}.md`,
        note('Gone', callBlock('side_effect', { label: `gone-${i}`, ms: 1500 })),
      );
    }
    await waitFor(async () => ((await starts(sideLog)).size >= 5 ? true : undefined), {
      message: 'all five calls running',
    });
    // The running daemon writes into the folder while it is being removed (its ledger, result
    // files): rm -r meets a folder that is not empty yet, and tries again, as a person would.
    await rm(join(vault.root, '.vaultd'), {
      recursive: true,
      force: true,
      maxRetries: 20,
      retryDelay: 10,
    });
    // A second daemon started now must not run beside the first.
    const second = await startSecond(vault);
    assert.notEqual(second, 'ready', 'a second daemon started beside the first');
    // The first finishes its notes; then a kill and a restart run nothing again.
    await waitFor(async () => (await vault.list('Done')).length === 5, { timeoutMs: 30_000 });
    daemon.child.kill('SIGKILL');
    await daemon.exited;
    for (let i = 0; i < 5; i++) {
      const text = await vault.read('Done', `gone-${i}.md`);
      await rm(join(vault.root, 'Done', `gone-${i}.md`));
      await vault.drop(`gone-${i}.md`, text);
    }
    const third = startCli(['run', '--config', vault.configPath]);
    cleanups.push(() => third.stop());
    await third.ready();
    await waitFor(async () => (await vault.list('Done')).length === 5, { timeoutMs: 30_000 });
    const counts = await starts(sideLog);
    for (let i = 0; i < 5; i++) assert.equal(counts.get(`gone-${i}`), 1, `gone-${i} ran once`);
  });

  it('the state folder removed again after it was restored: noticed at once, no second daemon', async () => {
    // The first removal is heard by the watch on the folder; a watch on a removed folder hears
    // nothing more, so the restored folder needs a watch of its own, or the next removal waits for
    // the periodic check (2 s), and a second vaultd started meanwhile takes the lock. The removal
    // (rm -r trying again while vaultd writes the folder back) also cuts restores short, and each
    // cut must be followed at once, not after a growing back-off (a CI run saw the second daemon
    // win in round 0 that way; measured over 60 rounds, 5 waited 2 s for the periodic check). Eight
    // rounds: each gives a second daemon its chance at the gap.
    const { vault, daemon, sideLog } = await startPluginDaemon();
    cleanups.push(
      () => vault.cleanup(),
      () => daemon.stop(),
    );
    const state = join(vault.root, '.vaultd');
    const lock = join(state, 'lock');
    for (let round = 0; round < 8; round++) {
      await rm(state, { recursive: true, force: true, maxRetries: 20, retryDelay: 10 });
      await waitFor(() => existsSync(lock) || undefined, { message: `lock restored (${round})` });
      await rm(state, { recursive: true, force: true, maxRetries: 20, retryDelay: 10 });
      const second = await startSecond(vault);
      assert.notEqual(
        second,
        'ready',
        `a second daemon started beside the first (round ${round})\n${daemon.output().slice(-4000)}`,
      );
    }
    // The first still works, and runs a call once.
    await vault.drop('after.md', note('After', callBlock('side_effect', { label: 'after' })));
    await waitFor(
      async () => ((await vault.list('Done')).includes('after.md') ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    assert.equal((await starts(sideLog)).get('after'), 1);
  });
});

describe('fault injection: the disk fills up while calls run', { timeout: 300_000 }, () => {
  it('defers, keeps every result, runs nothing twice, and finishes once space is back', async (t) => {
    const vault = await makeVault();
    const config = await readFile(vault.configPath, 'utf8');
    // A vault on a 4 MiB tmpfs of its own, so filling it touches nothing else.
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', vault.root]);
    if (mounted.status !== 0) {
      await vault.cleanup();
      t.skip(`cannot mount a tmpfs here (${mounted.stderr.toString().trim()}): needs root`);
      return;
    }
    const outside = await mkdtemp(join(tmpdir(), 'vaultd-full-'));
    const sideLog = join(outside, 'side-effects.log');
    let daemon: DaemonProcess | undefined;
    try {
      for (const folder of STATE_FOLDERS) await mkdir(join(vault.root, folder));
      await writeFile(
        vault.configPath,
        `${config}plugins:\n  - ${TEST_PLUGIN}\ntools:\n  side_effect:\n    log: ${sideLog}\n`,
      );
      daemon = startCli(['run', '--config', vault.configPath]);
      await daemon.ready();
      for (let i = 0; i < 6; i++) {
        await vault.drop(
          `full-${i}.md`,
          note('Full', callBlock('side_effect', { label: `full-${i}`, ms: 1500 }, `full-${i}`)),
        );
      }
      await waitFor(async () => ((await starts(sideLog)).size === 6 ? true : undefined), {
        message: 'all six calls running',
      });
      // Fill the disk while the calls run: their results, the ledger and the notes cannot be
      // written now.
      const filler = join(vault.root, 'filler.bin');
      spawnSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k']);
      await waitFor(() => /ENOSPC|no space/i.test(daemon?.output() ?? ''), {
        timeoutMs: 30_000,
        message: 'the daemon met the full disk',
      });
      await new Promise((resolve) => setTimeout(resolve, 2000));
      // Nothing was failed for it: every note is still in In_Progress/ (or done before the fill).
      assert.deepEqual(await vault.list('Failed'), [], 'no note failed because the disk was full');
      const exited = await Promise.race([daemon.exited, Promise.resolve('running')]);
      assert.equal(exited, 'running', 'the daemon stays up');
      await rm(filler);
      await waitFor(async () => (await vault.list('Done')).length === 6, {
        timeoutMs: 60_000,
        message: 'every note done once space is back',
      });
      const counts = await starts(sideLog);
      for (let i = 0; i < 6; i++) {
        assert.equal(counts.get(`full-${i}`), 1, `full-${i} ran once`);
        const results = resultsOf(await vault.read('Done', `full-${i}.md`));
        assert.deepEqual(
          results.map((r) => r.status),
          ['success'],
          `full-${i} has its real result`,
        );
      }
    } finally {
      await daemon?.stop();
      spawnSync('umount', [vault.root]);
      await vault.cleanup();
      await rm(outside, { recursive: true, force: true });
    }
  });
});
