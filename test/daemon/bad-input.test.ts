import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  note,
  resultsOf,
  startPluginDaemon,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { parseNote } from '../../src/note/index.ts';
import { editInPlace, pendingIds, tickBox, waitPending } from '../e2e/helpers.ts';

describe('vaultd run with hostile input: clear errors, nothing lost, daemon stays up', () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let sideLog: string;

  before(async () => {
    ({ vault, daemon, sideLog } = await startPluginDaemon(
      'settle_ms: 300\nmax_note_bytes: 4096\nmax_calls_per_note: 5\n',
    ));
  });

  after(async () => {
    const code = await daemon.stop();
    assert.equal(code, 0, daemon.output().slice(-3000));
    await vault.cleanup();
  });

  const inFolder = (name: string, folder: string): Promise<unknown> =>
    waitFor(async () => (await vault.whereIs(name)) === folder, {
      message: `${name} in ${folder}`,
    });

  it('moves a binary note that mentions tool_call to Failed/ unchanged, and logs why', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"tool_call": {"name": "side_effect", "parameters": {"label": "bin"}}}\n'),
      Buffer.from([0, 1, 2, 255, 0]),
    ]);
    await writeFile(join(vault.root, 'Needs_Action', 'binary.md'), bytes);
    await inFolder('binary.md', 'Failed');
    assert.deepEqual(await readFile(join(vault.root, 'Failed', 'binary.md')), bytes);
    await waitFor(() => daemon.output().includes('NOTE_NOT_TEXT'));
  });

  it('moves a non-UTF-8 note to Failed/ unchanged', async () => {
    const bytes = Buffer.concat([Buffer.from('tool_call '), Buffer.from([0xc3, 0x28, 0xa0, 0xa1])]);
    await writeFile(join(vault.root, 'Needs_Action', 'latin.md'), bytes);
    await inFolder('latin.md', 'Failed');
    assert.deepEqual(await readFile(join(vault.root, 'Failed', 'latin.md')), bytes);
  });

  it('gives a note over max_note_bytes a NOTE_TOO_LARGE result without parsing it, its text kept', async () => {
    const big = note('Big', callBlock('side_effect', { label: 'big' }), 'x'.repeat(6000));
    await vault.drop('big.md', big);
    await inFolder('big.md', 'Failed');
    const text = await readFile(join(vault.root, 'Failed', 'big.md'), 'utf8');
    assert.ok(text.startsWith(big), 'the original text is kept as it was');
    const [result] = resultsOf(text);
    assert.equal(result?.error?.code, 'NOTE_TOO_LARGE');
    assert.match(result?.error?.message ?? '', /max_note_bytes/);
    assert.equal(existsSync(sideLog) && (await readFile(sideLog, 'utf8')).includes('big'), false);
  });

  it('gives a note of more calls than max_calls_per_note a NOTE_TOO_LARGE result and runs none', async () => {
    // A 5 MB note of short blocks holds 180,000: each result, log line and record costs memory, and
    // the results alone would make a note of 200 MB.
    const blocks = [
      ...Array.from({ length: 4 }, (_, i) => callBlock('side_effect', { label: `many ${i}` })),
      '```json\n{"tool_call": 1}\n```',
      '```json\n{"tool_call": {"name": "nope"}}\n```',
    ];
    const text = note('Many', ...blocks);
    await vault.drop('many.md', text);
    await inFolder('many.md', 'Failed');
    const failed = await readFile(join(vault.root, 'Failed', 'many.md'), 'utf8');
    assert.ok(failed.startsWith(text), 'the original text is kept as it was');
    const results = resultsOf(failed);
    assert.equal(results.length, 1);
    assert.equal(results[0]?.error?.code, 'NOTE_TOO_LARGE');
    assert.match(results[0]?.error?.message ?? '', /6 tool_call blocks .*max_calls_per_note/);
    assert.equal(existsSync(sideLog) && (await readFile(sideLog, 'utf8')).includes('many'), false);
    // At the cap it runs, counting only the blocks that have no result yet.
    const five = note('Five', ...blocks.slice(1));
    await vault.drop('five.md', five);
    await inFolder('five.md', 'Failed');
    const log = await readFile(sideLog, 'utf8');
    assert.equal(log.match(/start many [123]/g)?.length, 3);
  });

  it('closes a fence the failed note leaves open before its error, so the error is read as a result', async () => {
    // Review finding: the error was appended blindly. Inside a ``` fence the note leaves open, the
    // section was the fence's content, and the result's own closing line ended the agent's fence.
    for (const [name, tail] of [
      ['open-fence', '```\nan open fence, never closed\n'],
      ['open-tilde', '~~~~ text\nstill open'],
      ['open-comment', '%%\nan open Obsidian comment\n'],
    ] as const) {
      const blocks = Array.from({ length: 6 }, (_, i) =>
        callBlock('side_effect', { label: `${name} ${i}` }),
      );
      const text = note(name, ...blocks) + '\n' + tail;
      await vault.drop(`${name}.md`, text);
      await inFolder(`${name}.md`, 'Failed');
      const failed = await readFile(join(vault.root, 'Failed', `${name}.md`), 'utf8');
      assert.ok(failed.startsWith(text), 'the original text is kept as it was');
      const parsed = parseNote(failed);
      assert.equal(parsed.results.get('note_error')?.errorCode, 'NOTE_TOO_LARGE', failed);
      assert.equal(parsed.calls.length, 6, 'the calls are read as before');
    }
    assert.equal(existsSync(sideLog) && (await readFile(sideLog, 'utf8')).includes('open-'), false);
  });

  it('never runs the call of a fence left open at the end once vaultd has closed it to write results', async () => {
    // Review finding: the error result of the open block had an id of its own; vaultd's write-back
    // closed the fence, and at the next look (a decision on another call) the block read as a new
    // call without a result and ran.
    const open =
      '```json\n{"tool_call": {"name": "side_effect", "parameters": {"label": "open-end"}}}\n';
    const text = note('Open end', callBlock('danger_zone', { target: 'open-end' })) + '\n' + open;
    await vault.drop('open-end.md', text);
    const pending = await waitPending(vault, 'open-end.md');
    const [id] = pendingIds(pending);
    await editInPlace(join(vault.root, 'Pending_Approval', 'open-end.md'), (t) =>
      tickBox(t, id ?? '', 'approve'),
    );
    // A note with an error result is filed under Failed/, the error saying why.
    await inFolder('open-end.md', 'Failed');
    assert.match(await readFile(join(vault.root, 'danger.log'), 'utf8'), /^open-end$/m);
    const done = await readFile(join(vault.root, 'Failed', 'open-end.md'), 'utf8');
    assert.equal(parseNote(done).calls.length, 2, 'the fence is closed now');
    assert.equal(
      existsSync(sideLog) && (await readFile(sideLog, 'utf8')).includes('open-end'),
      false,
    );
    assert.match(done, /is not closed, so its call did not run/);
  });

  it('runs a call two notes carry at once once, each note getting its result (review finding)', async () => {
    // Both copies passed their look at the ledger before either recorded its intent; the second
    // copy's refused intent was then recorded as the call's outcome, "failed before acting", under
    // the key the first copy was running, and after a kill the cut-off call ran again.
    const block = callBlock('side_effect', { label: 'twice-dropped', ms: 400 }, 'pay-42');
    await Promise.all([
      vault.drop('copy-a.md', note('Copy A', block)),
      vault.drop('copy-b.md', note('Copy B', block)),
    ]);
    await inFolder('copy-a.md', 'Done');
    await inFolder('copy-b.md', 'Done');
    // A third copy, later, is answered from the ledger: the run was recorded as a success.
    await vault.drop('copy-c.md', note('Copy C', block));
    await inFolder('copy-c.md', 'Done');
    const log = await readFile(sideLog, 'utf8');
    assert.equal(log.match(/start twice-dropped/g)?.length, 1, log);
    for (const name of ['copy-a.md', 'copy-b.md', 'copy-c.md']) {
      const [result] = resultsOf(await readFile(join(vault.root, 'Done', name), 'utf8'));
      assert.equal(result?.status, 'success', name);
    }
  });

  it('holds a note an agent put straight into In_Progress/ to max_calls_per_note', async () => {
    // Red-team replay: the cap was skipped for notes resumed from In_Progress/ (taken to be notes
    // vaultd claimed itself, under the cap), so 135,000 calls written there all ran.
    const blocks = Array.from({ length: 6 }, (_, i) =>
      callBlock('side_effect', { label: `planted ${i}` }),
    );
    const text = note('Planted', ...blocks);
    await writeFile(join(vault.root, 'In_Progress', 'planted.md'), text);
    await inFolder('planted.md', 'Failed');
    const failed = await readFile(join(vault.root, 'Failed', 'planted.md'), 'utf8');
    const results = resultsOf(failed);
    assert.equal(results.length, 1);
    assert.equal(results[0]?.error?.code, 'NOTE_TOO_LARGE');
    assert.equal(
      existsSync(sideLog) && (await readFile(sideLog, 'utf8')).includes('planted'),
      false,
    );
  });

  it('reads a decision on a note its results took past max_note_bytes, and fails one past twice that', async () => {
    // The cap (4096 here) is for what agents drop; results vaultd writes may take a note past
    // it. A tick in such a note was ignored without a word.
    const drop = async (name: string, chars: number): Promise<void> => {
      const text = note(
        name,
        callBlock('slow_echo', { text: 'e'.repeat(chars) }),
        callBlock('danger_zone', { target: name }),
      );
      assert.ok(text.length <= 4096, `${name} starts under the cap`);
      await vault.drop(`${name}.md`, text);
    };
    await drop('grown', 1_200);
    const pending = await waitPending(vault, 'grown.md');
    assert.ok(pending.length > 4096 && pending.length <= 8192, `${pending.length} bytes`);
    const [id] = pendingIds(pending);
    await editInPlace(join(vault.root, 'Pending_Approval', 'grown.md'), (t) =>
      tickBox(t, id ?? '', 'approve'),
    );
    await inFolder('grown.md', 'Done');
    assert.match(await readFile(join(vault.root, 'danger.log'), 'utf8'), /^grown$/m);
    // Past twice the cap the note is not left waiting for a tick vaultd would not read.
    await drop('past', 2_500);
    await inFolder('past.md', 'Failed');
    const failed = await readFile(join(vault.root, 'Failed', 'past.md'), 'utf8');
    assert.ok(failed.length > 8192, `${failed.length} bytes`);
    const last = resultsOf(failed).at(-1);
    assert.equal(last?.error?.code, 'NOTE_TOO_LARGE');
    assert.match(last?.error?.message ?? '', /results vaultd wrote into it.*not run/);
    assert.doesNotMatch(await readFile(join(vault.root, 'danger.log'), 'utf8'), /past/);
  });

  it('leaves a large note without tool_call alone', async () => {
    const text = `# Big but not ours\n\n${'y'.repeat(8000)}\n`;
    await vault.drop('big-plain.md', text);
    await vault.drop('marker-1.md', note('M', callBlock('slow_echo', { text: 'm' })));
    await inFolder('marker-1.md', 'Done');
    assert.equal(await vault.read('Needs_Action', 'big-plain.md'), text);
  });

  it('never follows a symlink in the inbox', async () => {
    const secret = join(vault.root, 'secret.txt');
    const secretText =
      'do not copy {"tool_call": {"name": "slow_echo", "parameters": {"text": "leak"}}}';
    await writeFile(secret, secretText);
    await symlink(secret, join(vault.root, 'Needs_Action', 'link.md'));
    await vault.drop('marker-2.md', note('M', callBlock('slow_echo', { text: 'm' })));
    await inFolder('marker-2.md', 'Done');
    assert.ok(
      existsSync(join(vault.root, 'Needs_Action', 'link.md')),
      'the link is left where it is',
    );
    assert.equal(await readFile(secret, 'utf8'), secretText);
    assert.deepEqual(
      (await vault.list('Done')).filter((n) => n.startsWith('link')),
      [],
    );
  });

  it('handles names with spaces, unicode and shell characters', async () => {
    const name = "tâche — été #1 $(rm -rf) 'x'.md";
    await vault.drop(name, note('Unicode', callBlock('slow_echo', { text: 'ok' })));
    await inFolder(name, 'Done');
    assert.equal(resultsOf(await vault.read('Done', name))[0]?.content, 'ok');
  });

  it('runs a note whose name is as long as the file system takes, and keeps the name', async () => {
    // 84 Chinese characters and `.md`: 255 bytes, the most a Linux name holds. The claim's name
    // in In_Progress/ (the note's name and a tag) did not fit: the note stayed in the inbox,
    // never run, its error logged at every scan.
    const name = `${'研究笔记'.repeat(21)}.md`;
    assert.equal(Buffer.byteLength(name), 255);
    await vault.drop(name, note('Long', callBlock('side_effect', { label: 'long-name' })));
    await inFolder(name, 'Done');
    assert.equal(resultsOf(await vault.read('Done', name))[0]?.status, 'success');
    // The same name again, while the first is in Done/: a numbered name, cut short to fit.
    await vault.drop(name, note('Long', callBlock('side_effect', { label: 'long-name 2' })));
    const second = await waitFor(
      async () => (await vault.list('Done')).find((n) => n !== name && n.startsWith('研究')),
      { message: 'the second long-named note in Done/' },
    );
    assert.ok(second.endsWith('-1.md') && Buffer.byteLength(second) <= 255, second);
    const log = await readFile(sideLog, 'utf8');
    assert.equal(log.match(/start long-name\n/g)?.length, 1);
    assert.equal(log.match(/start long-name 2/g)?.length, 1);
  });

  it('ignores dot files and editor temp files in the inbox', async () => {
    const call = note('Temp', callBlock('side_effect', { label: 'temp-file' }));
    for (const name of [
      '.hidden.md',
      '.note.md.swp',
      'note.md~',
      '#note.md#',
      'note.md.tmp',
      'note.txt',
    ]) {
      await writeFile(join(vault.root, 'Needs_Action', name), call);
    }
    await vault.drop('marker-3.md', note('M', callBlock('slow_echo', { text: 'm' })));
    await inFolder('marker-3.md', 'Done');
    const log = existsSync(sideLog) ? await readFile(sideLog, 'utf8') : '';
    assert.doesNotMatch(log, /temp-file/);
  });

  it('refuses front-matter that tries to run code or abuse YAML, and stays up', async () => {
    const tagged = `---\ntitle: !!js/function "function () { require('fs').writeFileSync('${join(vault.root, 'pwned2')}', 'x') }"\nbomb: &a [*a]\n---\n${callBlock('slow_echo', { text: 'after tags' })}\n`;
    await vault.drop('tags.md', tagged);
    await waitFor(
      async () =>
        (await vault.whereIs('tags.md')) === 'Done' ||
        (await vault.whereIs('tags.md')) === 'Failed',
    );
    assert.equal(existsSync(join(vault.root, 'pwned2')), false);
    await vault.drop('marker-4.md', note('M', callBlock('slow_echo', { text: 'still up' })));
    await inFolder('marker-4.md', 'Done');
  });
});
