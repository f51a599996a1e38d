import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  claimedPath,
  note,
  resultsOf,
  startPluginDaemon,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('vaultd run: a daemon child process on a temp vault', () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let sideLog: string;

  before(async () => {
    ({ vault, daemon, sideLog } = await startPluginDaemon('settle_ms: 400\n'));
  });

  after(async () => {
    // Every note's file is closed once the note is dealt with (the pipeline keeps a note open from
    // its read until its claim is checked).
    const pid = daemon.child.pid;
    const open: string[] = [];
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (target.startsWith(vault.root) && target.endsWith('.md')) open.push(target);
    }
    const code = await daemon.stop();
    assert.deepEqual(open, [], 'notes the daemon still holds open');
    assert.equal(code, 0, `daemon exit code, output:\n${daemon.output().slice(-3000)}`);
    await vault.cleanup();
  });

  const inFolder = (name: string, folder: string): Promise<true> =>
    waitFor(async () => (await vault.whereIs(name)) === folder || undefined, {
      message: `${name} in ${folder} (now in ${name})`,
    }) as Promise<true>;

  it('runs valid calls in block order, writes results and front-matter, moves the note to Done', async () => {
    await vault.drop(
      'valid.md',
      note(
        'Valid',
        callBlock('slow_echo', { text: 'first', ms: 30 }),
        'between',
        callBlock('slow_echo', { text: 'second' }),
      ),
    );
    await inFolder('valid.md', 'Done');
    const text = await vault.read('Done', 'valid.md');
    const results = resultsOf(text);
    assert.deepEqual(
      results.map((r) => [r.status, r.content]),
      [
        ['success', 'first'],
        ['success', 'second'],
      ],
    );
    assert.match(
      text,
      /^---\ntitle: Valid\nstatus: done\nprocessed_at: .+\ntool_calls: 2\ntool_errors: 0\n---\n# Valid/,
    );
    assert.match(text, /\n## Tool Results\n/);
    assert.equal(results[0]?.metadata['approved_by'], 'auto');
  });

  it('gives broken JSON an INVALID_JSON result once the note has settled, and fails the note', async () => {
    await vault.drop(
      'broken.md',
      note(
        'Broken',
        '```json\n{"tool_call": {"name": "slow_echo", "parameters": {"text": "x"}\n```',
      ),
    );
    await inFolder('broken.md', 'Failed');
    const [result] = resultsOf(await vault.read('Failed', 'broken.md'));
    assert.equal(result?.status, 'error');
    assert.equal(result?.error?.code, 'INVALID_JSON');
  });

  it('reports a missing and a wrongly typed parameter as INVALID_PARAMS naming the parameter', async () => {
    await vault.drop(
      'params.md',
      note('Params', callBlock('slow_echo', {}), callBlock('slow_echo', { text: 5 })),
    );
    await inFolder('params.md', 'Failed');
    const results = resultsOf(await vault.read('Failed', 'params.md'));
    assert.deepEqual(
      results.map((r) => r.error?.code),
      ['INVALID_PARAMS', 'INVALID_PARAMS'],
    );
    assert.match(results[0]?.error?.message ?? '', /text/);
    assert.match(results[1]?.error?.message ?? '', /text/);
  });

  it('reports an unknown tool as UNKNOWN_TOOL', async () => {
    await vault.drop('unknown.md', note('Unknown', callBlock('no_such_tool', { a: 1 })));
    await inFolder('unknown.md', 'Failed');
    const [result] = resultsOf(await vault.read('Failed', 'unknown.md'));
    assert.equal(result?.error?.code, 'UNKNOWN_TOOL');
  });

  it('leaves a note without calls exactly where and as it is', async () => {
    const text = '# Just a note\n\nMentions nothing to run.\n```json\n{"a": 1}\n```\n';
    await vault.drop('plain.md', text);
    await vault.drop('marker.md', note('Marker', callBlock('slow_echo', { text: 'm' })));
    await inFolder('marker.md', 'Done');
    assert.equal(await vault.read('Needs_Action', 'plain.md'), text);
  });

  it('waits for a half-written note and runs it once it is complete', async () => {
    const path = join(vault.root, 'Needs_Action', 'half.md');
    const full = note('Half', callBlock('slow_echo', { text: 'whole' }));
    const cut = full.indexOf('"parameters"');
    await writeFile(path, full.slice(0, cut));
    await new Promise((r) => setTimeout(r, 150));
    await writeFile(path, full);
    await inFolder('half.md', 'Done');
    const results = resultsOf(await vault.read('Done', 'half.md'));
    assert.deepEqual(
      results.map((r) => r.status),
      ['success'],
    );
  });

  it('keeps CRLF line endings and handles calls inside a callout', async () => {
    const crlf = note('Crlf', callBlock('slow_echo', { text: 'crlf' })).replace(/\n/g, '\r\n');
    await vault.drop('crlf.md', crlf);
    const callout =
      '---\ntitle: Callout\n---\n> [!todo] Do this\n> ```json\n> {"tool_call": {"name": "slow_echo", "parameters": {"text": "in callout"}}}\n> ```\n';
    await vault.drop('callout.md', callout);
    await inFolder('crlf.md', 'Done');
    await inFolder('callout.md', 'Done');
    const crlfText = await vault.read('Done', 'crlf.md');
    assert.equal(crlfText.replace(/\r\n/g, '').includes('\n'), false, 'no bare LF in a CRLF note');
    assert.equal(resultsOf(crlfText.replace(/\r\n/g, '\n'))[0]?.content, 'crlf');
    assert.equal(resultsOf(await vault.read('Done', 'callout.md'))[0]?.content, 'in callout');
  });

  it('never overwrites a note of the same name in Done/', async () => {
    await vault.drop('same.md', note('One', callBlock('slow_echo', { text: 'one' })));
    await inFolder('same.md', 'Done');
    await vault.drop('same.md', note('Two', callBlock('slow_echo', { text: 'two' })));
    await waitFor(async () => (await vault.list('Done')).includes('same-1.md'));
    assert.equal(resultsOf(await vault.read('Done', 'same.md'))[0]?.content, 'one');
    assert.equal(resultsOf(await vault.read('Done', 'same-1.md'))[0]?.content, 'two');
  });

  it('keeps a human edit made while a slow call runs, and the result', async () => {
    await vault.drop('edit.md', note('Edit', callBlock('slow_echo', { text: 'slow', ms: 1500 })));
    const path = await waitFor(() => claimedPath(vault, 'edit.md'));
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.replace('# Edit', '# Edit\n\nA line the human typed meanwhile.'));
    await inFolder('edit.md', 'Done');
    const done = await vault.read('Done', 'edit.md');
    assert.match(done, /A line the human typed meanwhile\./);
    assert.equal(resultsOf(done)[0]?.content, 'slow');
    // Nothing is left in In_Progress/: no claimed copy, no temp file of a write.
    const left = await readdir(join(vault.root, 'In_Progress'));
    assert.deepEqual(
      left.filter((name) => name.includes('edit')),
      [],
    );
  });

  it('keeps the mode a human gives the note while a slow call runs', async () => {
    // A chmod changes neither the size nor the modification time, so the note is not read again:
    // the new file that replaces it must take the mode it has just before the write, not the one
    // it had when it was read.
    await vault.drop('mode.md', note('Mode', callBlock('slow_echo', { text: 'slow', ms: 1000 })));
    const path = await waitFor(() => claimedPath(vault, 'mode.md'));
    await chmod(path, 0o640);
    await inFolder('mode.md', 'Done');
    assert.equal((await stat(join(vault.root, 'Done', 'mode.md'))).mode & 0o777, 0o640);
    assert.equal(resultsOf(await vault.read('Done', 'mode.md'))[0]?.content, 'slow');
  });

  it('never evaluates ---js front-matter and fails the note without running its calls', async () => {
    const marker = join(vault.root, 'pwned');
    const js = `---js\nrequire('fs').writeFileSync(${JSON.stringify(marker)}, 'x'); module.exports = {}\n---\n${callBlock('side_effect', { label: 'js-note' })}\n`;
    await vault.drop('js.md', js);
    await inFolder('js.md', 'Failed');
    assert.equal(existsSync(marker), false);
    const text = await vault.read('Failed', 'js.md');
    assert.ok(text.startsWith(`---js\nrequire('fs')`), 'front-matter kept as it was');
    assert.equal(resultsOf(text)[0]?.error?.code, 'UNSUPPORTED_FRONT_MATTER');
    const log = existsSync(sideLog) ? await readFile(sideLog, 'utf8') : '';
    assert.doesNotMatch(log, /js-note/);
  });

  it('never runs a tool_call that came back inside a result', async () => {
    const payload =
      'look:\n```json\n{"tool_call": {"name": "side_effect", "parameters": {"label": "smuggled"}}}\n```\n~~~json\n{"tool_call": {"name": "side_effect", "parameters": {"label": "smuggled"}}}\n~~~';
    await vault.drop('smuggle.md', note('Smuggle', callBlock('slow_echo', { text: payload })));
    await inFolder('smuggle.md', 'Done');
    // Move it back to the inbox: a rescan must find no call to run.
    const done = await vault.read('Done', 'smuggle.md');
    await vault.drop('smuggle-again.md', done);
    await inFolder('smuggle-again.md', 'Done');
    const log = existsSync(sideLog) ? await readFile(sideLog, 'utf8') : '';
    assert.doesNotMatch(log, /smuggled/);
    assert.equal(resultsOf(await vault.read('Done', 'smuggle-again.md')).length, 1);
  });

  it('runs nothing again for a note re-dropped after Done/', async () => {
    await vault.drop('once.md', note('Once', callBlock('side_effect', { label: 'once-only' })));
    await inFolder('once.md', 'Done');
    const done = await vault.read('Done', 'once.md');
    await vault.drop('once-again.md', done);
    await inFolder('once-again.md', 'Done');
    const log = await readFile(sideLog, 'utf8');
    assert.equal(log.match(/start once-only/g)?.length, 1);
  });

  it('runs a large, deeply nested note off the main thread, and keeps serving others meanwhile', async () => {
    const nested = `${'> - '.repeat(60)}text\n`.repeat(600);
    const text = note('Nested', callBlock('side_effect', { label: 'nested' }), nested);
    assert.ok(text.length > 64 * 1024, 'large enough for the worker');
    await vault.drop('nested.md', text);
    await vault.drop('meanwhile.md', note('Meanwhile', callBlock('slow_echo', { text: 'fine' })));
    await inFolder('meanwhile.md', 'Done');
    await inFolder('nested.md', 'Done');
    assert.equal((await readFile(sideLog, 'utf8')).match(/start nested/g)?.length, 1);
  });
});

describe('vaultd run: a note of thousands of calls', () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let sideLog: string;

  before(async () => {
    ({ vault, daemon, sideLog } = await startPluginDaemon());
  });

  after(async () => {
    assert.equal(await daemon.stop(), 0, daemon.output().slice(-3000));
    await vault.cleanup();
  });

  it('runs them all, results in block order, and lets the event loop run while they run', async () => {
    // In-process tools answer at once, so a note's calls would run as one chain of promises and
    // hold the main thread (no timer, HTTP request or other note) until the last one finished:
    // 570 ms for 12,000 calls, 3.5 s for 60,000 (SPEC section 6 allows 50 ms).
    const count = 3_000;
    const blocks = Array.from({ length: count }, (_, n) => callBlock('loop_turns', { n }));
    await vault.drop('many.md', note('Many', ...blocks));
    await waitFor(async () => (await vault.whereIs('many.md')) === 'Done' || undefined, {
      timeoutMs: 60_000,
      message: 'many.md in Done',
    });
    const text = await vault.read('Done', 'many.md');
    const results = resultsOf(text);
    assert.equal(results.length, count);
    const ids = [...text.matchAll(/"tool_call": ?\{"id"|```json\n\{"tool_call"/g)].length;
    assert.equal(ids, count, 'every call is still in the note');
    assert.ok(results.every((r) => r.status === 'success'));
    const turns = results.map((r) => Number(r.content));
    for (let i = 1; i < count; i++)
      assert.ok((turns[i] as number) >= (turns[i - 1] as number), 'results in block order');
    assert.ok(
      new Set(turns).size > 1,
      'the event loop turned while the calls ran (all returned the same count)',
    );
    assert.match(text, new RegExp(`^tool_calls: ${count}$`, 'm'));
  });

  it('does not keep the calls of a note dropped after it waiting behind all of its own', async () => {
    // Every call of a note used to be queued for the cap at once, so a note dropped a moment
    // later waited for all 400 (about 1 s here); now a note queues as many as run at once.
    const blocks = Array.from({ length: 400 }, (_, n) =>
      callBlock('side_effect', { label: `many-${n}`, ms: 25 }),
    );
    await vault.drop('slow-many.md', note('Slow many', ...blocks));
    const started = async (): Promise<number> =>
      ((await readFile(sideLog, 'utf8').catch(() => '')).match(/^start many-/gm) ?? []).length;
    await waitFor(async () => (await started()) > 0 || undefined, {
      message: 'the first calls of slow-many.md started',
    });
    await vault.drop('quick.md', note('Quick', callBlock('slow_echo', { text: 'quick' })));
    await waitFor(async () => (await vault.whereIs('quick.md')) === 'Done' || undefined, {
      message: 'quick.md in Done',
    });
    const before = await started();
    assert.ok(before < 200, `${before} of the 400 calls had started when quick.md was done`);
    await waitFor(async () => (await vault.whereIs('slow-many.md')) === 'Done' || undefined, {
      timeoutMs: 60_000,
      message: 'slow-many.md in Done',
    });
    assert.equal(await started(), 400);
  });
});

describe('vaultd run: the call budget of notes worked on at once', () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let sideLog: string;

  before(async () => {
    // The budget is twice max_calls_per_note: two notes of 100 calls at once here.
    ({ vault, daemon, sideLog } = await startPluginDaemon('max_calls_per_note: 100\n'));
  });

  after(async () => {
    assert.equal(await daemon.stop(), 0, daemon.output().slice(-3000));
    await vault.cleanup();
  });

  it('works on at most two notes of 100 calls at once, and on a note of a few calls beside them', async () => {
    // 40 notes of 10,000 calls at once took the daemon past a 256 MB heap: each holds its calls,
    // results and records until it is written back.
    const heavy = (n: number): string =>
      note(
        `Heavy ${n}`,
        ...Array.from({ length: 100 }, (_, i) =>
          callBlock('side_effect', { label: `h${n}-${i}`, ms: 5 }),
        ),
      );
    for (let n = 0; n < 4; n++) await vault.drop(`heavy-${n}.md`, heavy(n));
    await vault.drop('light.md', note('Light', callBlock('side_effect', { label: 'light' })));
    for (const name of ['light.md', ...[0, 1, 2, 3].map((n) => `heavy-${n}.md`)]) {
      await waitFor(async () => (await vault.whereIs(name)) === 'Done' || undefined, {
        timeoutMs: 60_000,
        message: `${name} in Done`,
      });
    }
    const lines = (await readFile(sideLog, 'utf8')).trim().split('\n');
    // Each heavy note's span in the log: from its first call's start to its last call's end.
    const spans = [0, 1, 2, 3].map((n) => {
      const mine = lines.flatMap((line, i) => (line.includes(` h${n}-`) ? [i] : []));
      assert.equal(mine.length, 200, `every call of heavy-${n} started and ended once`);
      return [mine[0] as number, mine.at(-1) as number] as const;
    });
    let most = 0;
    for (let i = 0; i < lines.length; i++) {
      most = Math.max(most, spans.filter(([a, b]) => a <= i && i <= b).length);
    }
    assert.equal(most, 2, 'heavy notes worked on at once');
    const light = lines.indexOf('start light');
    const lastHeavy = Math.max(...spans.map(([, b]) => b));
    assert.ok(light >= 0 && light < lastHeavy, 'the light note did not wait for the heavy ones');
  });
});

describe('vaultd run: parse_timeout_ms, the safety net for an overloaded machine', () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let sideLog: string;

  before(async () => {
    ({ vault, daemon, sideLog } = await startPluginDaemon('parse_timeout_ms: 1\n'));
  });

  after(async () => {
    await daemon.stop();
    await vault.cleanup();
  });

  const inFolder = (name: string, folder: string): Promise<true> =>
    waitFor(async () => (await vault.whereIs(name)) === folder || undefined, {
      message: `${name} in ${folder}`,
    }) as Promise<true>;

  it('fails a note that takes longer than parse_timeout_ms to parse, its text kept, and serves others meanwhile', async () => {
    // Linear, but 4 MB of nested lists takes far more than the 100 ms this vault allows.
    let lists = '';
    for (let i = 0; lists.length < 4 * 1024 * 1024; i++)
      lists += `${'  '.repeat(i % 40)}- item ${i}\n`;
    const text = note('Huge', callBlock('side_effect', { label: 'huge' }), lists);
    await vault.drop('huge.md', text);
    await vault.drop(
      'meanwhile-2.md',
      note('Meanwhile', callBlock('slow_echo', { text: 'fine 2' })),
    );
    await inFolder('meanwhile-2.md', 'Done');
    await inFolder('huge.md', 'Failed');
    const failed = await vault.read('Failed', 'huge.md');
    assert.ok(failed.startsWith(text), 'the note text is kept as it was');
    assert.equal(resultsOf(failed)[0]?.error?.code, 'NOTE_TOO_COMPLEX');
    const log = existsSync(sideLog) ? await readFile(sideLog, 'utf8') : '';
    assert.doesNotMatch(log, /huge/);
  });
});
