import type * as NodeFs from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { callKey, DuplicateIntentError, Ledger } from '../../src/vault/ledger.ts';

const intent = (key: string, note = 'In_Progress/a.vaultd-1-2-abcd-0.md') => ({
  key,
  note,
  callId: key.split(':')[1] ?? key,
  tool: 'side_effect',
  argsHash: 'h',
});

describe('Ledger', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-ledger-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keys a call by its explicit id and arguments, or by the note name and derived id', () => {
    assert.equal(callKey({ id: 'x', explicitId: true, argsHash: 'h' }, 'a.md'), 'id:x:h');
    assert.equal(
      callKey({ id: 'call_1', explicitId: false, argsHash: 'h' }, 'a.md'),
      'note:a.md:call_1',
    );
  });

  it('keeps an intent made durable while a compaction runs (review finding)', async () => {
    // The compaction took its lines from memory when asked, and the journal wrote the appends
    // queued before it to the old file first: an intent fsynced and resolved there (its call
    // run) was erased by the rename, and the call ran again after a restart. 20 rounds.
    for (let round = 0; round < 20; round += 1) {
      const here = await mkdtemp(join(dir, 'round-'));
      const ledger = await Ledger.open(here, { compactAboveBytes: 200 });
      await ledger.recordIntent(intent('id:old:h', 'In_Progress/a.md'));
      await ledger.recordDone('id:old:h', 'success', true, { big: 'x'.repeat(300) });
      const written = ledger.markWritten(['id:old:h'], 'Done/a.md'); // over 200 bytes: compacts
      await new Promise((resolve) => setImmediate(resolve));
      await ledger.recordIntent(intent(`id:new${round}:h`, 'In_Progress/b.md'));
      const direct = ledger.compact();
      await ledger.recordIntent(intent(`id:next${round}:h`, 'In_Progress/c.md'));
      await Promise.all([written, direct]);
      await ledger.drain();
      const reopened = await Ledger.open(here);
      try {
        assert.notEqual(reopened.lookup(`id:new${round}:h`), undefined, `round ${round}`);
        assert.notEqual(reopened.lookup(`id:next${round}:h`), undefined, `round ${round}`);
        assert.equal(reopened.lookup('id:old:h')?.written, true);
      } finally {
        await reopened.close();
        await ledger.close();
      }
    }
  });

  it('keeps appending to the file at its path when a compaction fails to open it (review finding)', async () => {
    // The compacted file was renamed into place, then opened for appending; when that open failed
    // (EMFILE), the journal kept its old handle, on a file no longer at the path: later intents
    // resolved as durable and were in no file a restart reads.
    const ledger = await Ledger.open(dir);
    await ledger.recordIntent(intent('id:a:h', 'In_Progress/a.md'));
    const fs = createRequire(import.meta.url)('node:fs') as typeof NodeFs;
    const promises = fs.promises as unknown as Record<string, unknown>;
    const realOpen = fs.promises.open;
    promises['open'] = async (path: string, flags: string, ...rest: unknown[]) => {
      if (flags === 'a')
        throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
      return (realOpen as (...args: unknown[]) => unknown)(path, flags, ...rest);
    };
    syncBuiltinESMExports();
    try {
      await assert.rejects(ledger.compact(), /EMFILE/);
    } finally {
      promises['open'] = realOpen;
      syncBuiltinESMExports();
    }
    await ledger.recordIntent(intent('id:b:h', 'In_Progress/b.md'));
    assert.equal(await ledger.isCurrent(), true);
    await ledger.close();
    const reopened = await Ledger.open(dir);
    try {
      assert.notEqual(reopened.lookup('id:a:h'), undefined);
      assert.notEqual(
        reopened.lookup('id:b:h'),
        undefined,
        'the intent after the failure is on disk',
      );
    } finally {
      await reopened.close();
    }
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.includes('.tmp')),
      [],
      'no temp file left',
    );
  });

  it('refuses a second intent for a call running or that may have acted (review finding)', async () => {
    // Two claims of one approved note (a copy moved in beside the claim) both passed their look
    // at the ledger before either ran, and both intents were taken: the call ran twice.
    const ledger = await Ledger.open(dir);
    try {
      const [first, second] = await Promise.allSettled([
        ledger.recordIntent(intent('id:c1:h', 'In_Progress/a.md')),
        ledger.recordIntent(intent('id:c1:h', 'In_Progress/a-1.md')),
      ]);
      assert.equal(first.status, 'fulfilled');
      assert.equal(second.status, 'rejected');
      assert.ok((second as PromiseRejectedResult).reason instanceof DuplicateIntentError);
      // Failed without acting: it may run again; a success may not.
      await ledger.recordDone('id:c1:h', 'error', false, { failed: true });
      await ledger.recordIntent(intent('id:c1:h', 'In_Progress/a.md'));
      await ledger.recordDone('id:c1:h', 'success', true, { ok: true });
      await assert.rejects(
        ledger.recordIntent(intent('id:c1:h', 'In_Progress/a.md')),
        DuplicateIntentError,
      );
    } finally {
      await ledger.close();
    }
  });

  it('keeps a large result when its own file cannot be written (review finding)', async () => {
    const ledger = await Ledger.open(dir, { inlineResultBytes: 10 });
    await writeFile(join(dir, 'results'), 'not a folder');
    await ledger.recordIntent(intent('id:big:h'));
    const result = { id: 'big', status: 'success', content: 'x'.repeat(100) };
    await ledger.recordDone('id:big:h', 'success', true, result);
    assert.equal(ledger.lookup('id:big:h')?.status, 'success');
    assert.deepEqual(await ledger.result('id:big:h'), result);
    await ledger.close();
    const reopened = await Ledger.open(dir, { inlineResultBytes: 10 });
    assert.deepEqual(await reopened.result('id:big:h'), result);
    await reopened.close();
  });

  it('records intent, outcome and write-back, and reads them back after a reopen', async () => {
    const ledger = await Ledger.open(dir);
    await ledger.recordIntent(intent('id:one:h'));
    assert.equal(ledger.isInFlight('id:one:h'), true);
    assert.equal(ledger.lookup('id:one:h')?.status, null);
    const result = { id: 'one', status: 'success', content: 'ok' };
    await ledger.recordDone('id:one:h', 'success', true, result);
    assert.equal(ledger.isInFlight('id:one:h'), false);
    await ledger.markWritten(['id:one:h'], 'Done/a.md');
    await ledger.recordIntent(intent('id:two:h'));
    await ledger.close();

    const again = await Ledger.open(dir);
    const one = again.lookup('id:one:h');
    assert.equal(one?.status, 'success');
    assert.equal(one?.written, true);
    assert.equal(one?.writtenTo, 'Done/a.md');
    assert.deepEqual(await again.result('id:one:h'), result);
    const two = again.lookup('id:two:h');
    assert.equal(two?.status, null, 'an open intent survives a crash');
    assert.equal(again.isInFlight('id:two:h'), false, 'but it is not running in this process');
    assert.equal(again.damage, null);
    await again.close();
  });

  it('keeps a large result in a file of its own and removes it once the entry is gone', async () => {
    const ledger = await Ledger.open(dir, { inlineResultBytes: 100, replayWindowMs: 0 });
    await ledger.recordIntent(intent('note:a.md:big'));
    const big = { id: 'big', content: 'x'.repeat(10_000) };
    await ledger.recordDone('note:a.md:big', 'success', true, big);
    assert.ok((await readFile(join(dir, 'ledger.jsonl'), 'utf8')).length < 2000);
    assert.equal((await readdir(join(dir, 'results'))).length, 1);
    assert.deepEqual(await ledger.result('note:a.md:big'), big);
    await ledger.markWritten(['note:a.md:big'], 'Done/a.md');
    await ledger.compact();
    assert.equal(ledger.lookup('note:a.md:big'), undefined, 'past the replay window');
    assert.deepEqual(await readdir(join(dir, 'results')), []);
    await ledger.close();
  });

  it('never forgets a call whose result has not reached a note, however old', async () => {
    const ledger = await Ledger.open(dir, { replayWindowMs: 0, retentionMs: 0 });
    await ledger.recordIntent(intent('note:a.md:x'));
    await ledger.recordDone('note:a.md:x', 'success', true, { id: 'x' });
    await ledger.compact();
    assert.equal(ledger.lookup('note:a.md:x')?.status, 'success');
    await ledger.close();
  });

  it('cuts a torn last line and keeps a damaged file aside, remembering the ids it held', async () => {
    const ledger = await Ledger.open(dir);
    await ledger.recordIntent(intent('id:keep:h'));
    await ledger.close();
    const path = join(dir, 'ledger.jsonl');
    await appendFile(path, '{"t":"intent","k":"id:torn');
    const torn = await Ledger.open(dir);
    assert.equal(torn.damage, null, 'a torn last line is what a crash leaves');
    assert.ok(!(await readFile(path, 'utf8')).includes('torn'));
    await torn.close();

    await appendFile(path, 'xx{"t":"intent","k":"id:lost-call:h","call":"lost-call"\n');
    const damaged = await Ledger.open(dir);
    assert.equal(damaged.damage?.badLines, 1);
    assert.match(await readFile(damaged.damage?.keptAt ?? '', 'utf8'), /lost-call/);
    assert.equal(damaged.mayHaveLost('lost-call'), true);
    assert.equal(damaged.mayHaveLost('keep'), false, 'a readable entry is not lost');
    assert.equal(damaged.mayHaveLost('never-seen'), false);
    assert.equal(damaged.lookup('id:keep:h')?.status, null, 'the readable lines still count');
    await damaged.close();
  });

  it('keeps a file with every readable line at its name when setting a damaged one aside stops midway (crash audit)', async () => {
    // The damaged file was renamed aside first and the readable lines written back under its name
    // after: a kill between the two left no file at the name, and the next start saw an empty,
    // undamaged ledger (a finished call with side effects ran again). A failure of the step after
    // the first one stands in for the kill: the write of the clean file, or its rename into place.
    const fs = createRequire(import.meta.url)('node:fs') as typeof NodeFs;
    const patched = fs as unknown as Record<string, unknown>;
    const enospc = (): NodeJS.ErrnoException =>
      Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    const isTemp = (file: unknown): boolean =>
      typeof file === 'string' && /\/\.ledger\.jsonl\.vaultd-.*\.tmp$/.test(file);
    const faults: Record<string, Record<string, unknown>> = {
      'the write of the clean file': {
        openSync: (file: unknown, ...rest: unknown[]) => {
          if (isTemp(file)) throw enospc();
          return (fs.openSync as (...args: unknown[]) => unknown)(file, ...rest);
        },
        open: (file: unknown, ...rest: unknown[]) => {
          if (!isTemp(file)) return (fs.open as (...args: unknown[]) => unknown)(file, ...rest);
          const done = rest.at(-1) as (error: Error) => void;
          setImmediate(() => done(enospc()));
        },
      },
      'the rename of the clean file into place': {
        renameSync: (from: unknown, to: unknown) => {
          if (isTemp(from)) throw enospc();
          fs.renameSync(from as string, to as string);
        },
        rename: (from: unknown, to: unknown, done: (error: Error | null) => void) => {
          if (isTemp(from)) setImmediate(() => done(enospc()));
          else fs.rename(from as string, to as string, done);
        },
      },
    };
    for (const [step, replaced] of Object.entries(faults)) {
      const here = await mkdtemp(join(dir, 'aside-'));
      const path = join(here, 'ledger.jsonl');
      const ledger = await Ledger.open(here);
      await ledger.recordIntent(intent('id:keep:h'));
      await ledger.recordDone('id:keep:h', 'success', true, { ok: true });
      await ledger.close();
      await appendFile(path, 'xx{"t":"intent","k":"id:lost-call:h","call":"lost-call"\n');
      const damagedText = await readFile(path, 'utf8');
      const saved = Object.fromEntries(Object.keys(replaced).map((k) => [k, patched[k]]));
      Object.assign(patched, replaced);
      syncBuiltinESMExports();
      try {
        await assert.rejects(Ledger.open(here), /ENOSPC/, step);
      } finally {
        Object.assign(patched, saved);
        syncBuiltinESMExports();
      }
      const left = await readFile(path, 'utf8').catch(() => null);
      assert.notEqual(left, null, `${step}: a file is still at the journal's name`);
      assert.match(left ?? '', /id:keep:h/, `${step}: with every readable line`);
      // The damaged original is kept: still at the name (and perhaps under a kept-aside name).
      assert.equal(left, damagedText, `${step}: the damaged original is kept at the name`);
      for (const name of (await readdir(here)).filter((n) => n.includes('.damaged-')))
        assert.equal(await readFile(join(here, name), 'utf8'), damagedText, step);

      // The next start sets it aside again and reads what it can.
      const reopened = await Ledger.open(here);
      try {
        assert.equal(reopened.damage?.badLines, 1, step);
        assert.equal(await readFile(reopened.damage?.keptAt ?? '', 'utf8'), damagedText, step);
        assert.equal(reopened.lookup('id:keep:h')?.status, 'success', step);
        assert.equal(reopened.mayHaveLost('lost-call'), true, step);
        assert.doesNotMatch(await readFile(path, 'utf8'), /lost-call/, step);
      } finally {
        await reopened.close();
      }
    }
  });

  it('knows when its file was deleted or replaced under it', async () => {
    const ledger = await Ledger.open(dir);
    await ledger.recordIntent(intent('id:a:h'));
    assert.equal(await ledger.isCurrent(), true);
    await unlink(join(dir, 'ledger.jsonl'));
    assert.equal(await ledger.isCurrent(), false);
    await ledger.compact();
    assert.equal(await ledger.isCurrent(), true);
    assert.match(await readFile(join(dir, 'ledger.jsonl'), 'utf8'), /id:a:h/);
    await writeFile(join(dir, 'ledger.jsonl'), '');
    assert.equal(await ledger.isCurrent(), true, 'same inode, truncated: still ours');
    await ledger.close();
  });

  it('keeps an outcome in memory when writing it fails, and forgets on request', async () => {
    const ledger = await Ledger.open(dir);
    await ledger.recordIntent(intent('id:f:h'));
    await ledger.recordDone('id:f:h', 'error', false, { id: 'f' });
    assert.equal(ledger.lookup('id:f:h')?.effect, false);
    await ledger.forget('id:f:h');
    assert.equal(ledger.lookup('id:f:h'), undefined);
    await ledger.close();
  });
});
