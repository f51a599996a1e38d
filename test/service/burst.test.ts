import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  note,
  resultsOf,
  startCli,
  STATE_FOLDERS,
  type DaemonProcess,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { killIfRunning, makeServiceVault, signalAndWait, type ServiceVault } from './helpers.ts';

const NOTES = 20_000;
const PARALLEL = 64;
const DEADLINE_MS = 5 * 60_000;

const nameOf = (i: number): string => `burst-${String(i).padStart(5, '0')}.md`;

/** Names of the `.md` files of a folder (a plain readdir: cheap even with 20,000 entries). */
async function notesIn(vault: ServiceVault, folder: string): Promise<string[]> {
  return (await readdir(join(vault.root, folder))).filter((n) => n.endsWith('.md'));
}

describe('vaultd run: a burst of 20,000 notes', () => {
  let vault: ServiceVault;
  let daemon: DaemonProcess;

  before(async () => {
    // Info level: debug lines for 20,000 notes would only cost the test time.
    vault = await makeServiceVault({ logLevel: 'info' });
    daemon = startCli(['run', '--config', vault.configPath]);
    await daemon.ready();
  });

  after(async () => {
    await killIfRunning(daemon);
    await vault.cleanup();
  });

  it('moves every note dropped into a running daemon to Done/, none lost or left elsewhere', async (t) => {
    const started = Date.now();
    const staging = join(vault.root, '.staging');
    await mkdir(staging);
    // Each note is written elsewhere, then renamed into the inbox: what a careful agent does.
    let next = 0;
    const dropOne = async (i: number): Promise<void> => {
      const name = nameOf(i);
      const tmp = join(staging, name);
      await writeFile(tmp, note(`Burst ${i}`, callBlock('slow_echo', { text: `n${i}`, ms: 0 })));
      await rename(tmp, join(vault.root, 'Needs_Action', name));
    };
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next < NOTES) await dropOne(next++);
      }),
    );
    const dropped = Date.now();
    t.diagnostic(`dropped ${NOTES} notes in ${dropped - started} ms`);

    const counts = async (): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const f of STATE_FOLDERS) out[f] = (await notesIn(vault, f)).length;
      return out;
    };
    try {
      await waitFor(async () => (await notesIn(vault, 'Done')).length >= NOTES, {
        timeoutMs: DEADLINE_MS,
        intervalMs: 500,
      });
    } catch {
      assert.fail(
        `not all ${NOTES} notes reached Done/ within ${DEADLINE_MS} ms: ${JSON.stringify(await counts())}\n` +
          daemon.output().slice(-2000),
      );
    }
    const finished = Date.now();
    t.diagnostic(
      `all in Done/ ${finished - started} ms after the first drop, ${finished - dropped} ms after the last; ` +
        `${Math.round((NOTES * 1000) / (finished - started))} notes/s overall`,
    );

    const doneNames = new Set(await notesIn(vault, 'Done'));
    assert.equal(
      doneNames.size,
      NOTES,
      'exactly the dropped notes, no duplicates or renamed copies',
    );
    for (let i = 0; i < NOTES; i++) assert.ok(doneNames.has(nameOf(i)), `${nameOf(i)} in Done/`);
    let checked = 0;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (checked < NOTES) {
          const i = checked++;
          const results = resultsOf(await readFile(join(vault.root, 'Done', nameOf(i)), 'utf8'));
          assert.deepEqual(
            results.map((r) => [r.status, r.content]),
            [['success', `n${i}`]],
            nameOf(i),
          );
        }
      }),
    );
    for (const folder of STATE_FOLDERS.filter((f) => f !== 'Done')) {
      assert.deepEqual(await notesIn(vault, folder), [], `${folder}/ is empty`);
    }
    assert.equal(await signalAndWait(daemon, 'SIGTERM'), 0);
  });
});
