import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Ledger } from '../../src/vault/index.ts';

const LEDGER_MODULE = new URL('../../src/vault/ledger.ts', import.meta.url).href;

let stateDir: string;
const open: Ledger[] = [];
beforeEach(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'vaultd-ledger-'));
});
afterEach(async () => {
  for (const ledger of open.splice(0)) await ledger.close();
  await rm(stateDir, { recursive: true, force: true });
});

async function openLedger(options = {}): Promise<Ledger> {
  const ledger = await Ledger.open(stateDir, options);
  open.push(ledger);
  return ledger;
}

const intent = (note: string, callId: string, tool = 'send_notification') => ({
  note,
  callId,
  tool,
  argsHash: `h-${callId}`,
});

describe('Ledger', () => {
  it('reports intents without completion as open, per note', async () => {
    const ledger = await openLedger();
    await ledger.recordIntent(intent('In_Progress/a.md', 'c1'));
    await ledger.recordIntent(intent('In_Progress/a.md', 'c2'));
    await ledger.recordIntent(intent('In_Progress/b.md', 'c3'));
    await ledger.recordDone('In_Progress/a.md', 'c1', 'success');
    assert.deepEqual([...ledger.openIntents('In_Progress/a.md').keys()], ['c2']);
    assert.deepEqual(
      ledger.openIntents('In_Progress/a.md').get('c2'),
      intent('In_Progress/a.md', 'c2'),
    );
    assert.deepEqual(ledger.notesWithOpenIntents(), ['In_Progress/a.md', 'In_Progress/b.md']);
    assert.equal(ledger.calls('In_Progress/a.md').get('c1')?.status, 'success');
    assert.equal(ledger.openIntents('In_Progress/none.md').size, 0);
  });

  it('keeps everything across a clean reopen', async () => {
    const first = await Ledger.open(stateDir);
    await first.recordIntent(intent('In_Progress/a.md', 'c1'));
    await first.recordIntent(intent('In_Progress/a.md', 'c2'));
    await first.recordDone('In_Progress/a.md', 'c2', 'error');
    await first.close();
    await assert.rejects(first.recordIntent(intent('In_Progress/a.md', 'c3')), /closed/);
    const second = await openLedger();
    assert.deepEqual([...second.openIntents('In_Progress/a.md').keys()], ['c1']);
    assert.equal(second.calls('In_Progress/a.md').get('c2')?.status, 'error');
  });

  it('keeps fsynced intents of a process killed with SIGKILL', async () => {
    const script = `
      const { Ledger } = await import(${JSON.stringify(LEDGER_MODULE)});
      const ledger = await Ledger.open(${JSON.stringify(stateDir)});
      await Promise.all([1, 2, 3].map((i) => ledger.recordIntent({ note: 'In_Progress/t.md', callId: 'c' + i, tool: 'write_file', argsHash: 'h' })));
      await ledger.recordDone('In_Progress/t.md', 'c1', 'success');
      await ledger.recordIntent({ note: 'In_Progress/u.md', callId: 'c9', tool: 'shell_exec', argsHash: 'h' });
      console.log('recorded');
      setInterval(() => {}, 1000);`;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    assert.equal(line, 'recorded');
    child.kill('SIGKILL');
    await once(child, 'exit');
    const ledger = await openLedger();
    assert.deepEqual([...ledger.openIntents('In_Progress/t.md').keys()].sort(), ['c2', 'c3']);
    assert.deepEqual(ledger.notesWithOpenIntents().sort(), [
      'In_Progress/t.md',
      'In_Progress/u.md',
    ]);
  });

  it('ignores a torn last line and appends after it on a clean line', async () => {
    const first = await Ledger.open(stateDir);
    await first.recordIntent(intent('In_Progress/a.md', 'c1'));
    await first.close();
    const path = join(stateDir, 'ledger.jsonl');
    await appendFile(path, '{"type":"intent","note":"In_Progress/a.md","callId":"c2","to');
    const second = await Ledger.open(stateDir);
    assert.deepEqual([...second.openIntents('In_Progress/a.md').keys()], ['c1']);
    await second.recordIntent(intent('In_Progress/a.md', 'c3'));
    await second.close();
    const lines = (await readFile(path, 'utf8')).split('\n');
    assert.equal(lines.pop(), '');
    for (const text of lines) JSON.parse(text);
    const third = await openLedger();
    assert.deepEqual([...third.openIntents('In_Progress/a.md').keys()], ['c1', 'c3']);
  });

  it('skips garbage lines in the middle of the file', async () => {
    await writeFile(
      join(stateDir, 'ledger.jsonl'),
      [
        JSON.stringify({ type: 'intent', ...intent('n.md', 'c1'), at: '' }),
        'not json',
        '{"type":"intent","note":"n.md"}',
        JSON.stringify({ type: 'intent', ...intent('n.md', 'c2'), at: '' }),
        '',
      ].join('\n'),
    );
    const ledger = await openLedger();
    assert.deepEqual([...ledger.openIntents('n.md').keys()], ['c1', 'c2']);
  });

  it('forgets a released note, also after reopening', async () => {
    const first = await Ledger.open(stateDir);
    await first.recordIntent(intent('In_Progress/a.md', 'c1'));
    await first.recordIntent(intent('In_Progress/b.md', 'c2'));
    await first.release('In_Progress/a.md');
    assert.equal(first.openIntents('In_Progress/a.md').size, 0);
    assert.equal(first.calls('In_Progress/a.md').size, 0);
    await first.close();
    const second = await openLedger();
    assert.deepEqual(second.notesWithOpenIntents(), ['In_Progress/b.md']);
  });

  it('compacts to the live entries only, atomically, and keeps appending afterwards', async () => {
    const ledger = await openLedger();
    for (let i = 0; i < 50; i += 1) {
      await ledger.recordIntent(intent(`In_Progress/n${i}.md`, `c${i}`));
      await ledger.recordDone(`In_Progress/n${i}.md`, `c${i}`, 'success');
      if (i !== 7) await ledger.release(`In_Progress/n${i}.md`);
    }
    await ledger.recordIntent(intent('In_Progress/open.md', 'x'));
    const path = join(stateDir, 'ledger.jsonl');
    const before = (await stat(path)).size;
    await ledger.compact();
    const text = await readFile(path, 'utf8');
    assert.ok(text.length < before / 10);
    assert.equal(text.trim().split('\n').length, 3);
    await ledger.recordIntent(intent('In_Progress/after.md', 'y'));
    await ledger.close();
    open.splice(0);
    const reopened = await openLedger();
    assert.deepEqual(reopened.notesWithOpenIntents(), [
      'In_Progress/open.md',
      'In_Progress/after.md',
    ]);
    assert.equal(reopened.calls('In_Progress/n7.md').get('c7')?.status, 'success');
    assert.equal(reopened.calls('In_Progress/n8.md').size, 0);
  });

  it('compacts at open when the file is larger than the threshold', async () => {
    const first = await Ledger.open(stateDir);
    for (let i = 0; i < 40; i += 1) {
      await first.recordIntent(intent(`n${i}.md`, `c${i}`));
      await first.release(`n${i}.md`);
    }
    await first.recordIntent(intent('keep.md', 'k'));
    await first.close();
    const path = join(stateDir, 'ledger.jsonl');
    const before = (await stat(path)).size;
    const ledger = await openLedger({ compactAboveBytes: 1000 });
    assert.ok((await stat(path)).size < before / 10);
    assert.deepEqual(ledger.notesWithOpenIntents(), ['keep.md']);
  });

  it('groups concurrent intents and keeps each one', async () => {
    const ledger = await openLedger();
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => ledger.recordIntent(intent('n.md', `c${i}`))),
    );
    assert.equal(ledger.openIntents('n.md').size, 200);
    const lines = (await readFile(join(stateDir, 'ledger.jsonl'), 'utf8')).trim().split('\n');
    assert.equal(lines.length, 200);
  });
});
