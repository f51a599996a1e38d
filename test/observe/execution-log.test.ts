import assert from 'node:assert/strict';
import {
  appendFile,
  link,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  ExecutionLog,
  readExecutionLog,
  type ExecutionLogEntry,
} from '../../src/observe/execution-log.ts';
import { waitFor } from '../helpers/wait-for.ts';

let logsDir: string;
const logs: ExecutionLog[] = [];
beforeEach(async () => {
  logsDir = join(await mkdtemp(join(tmpdir(), 'vaultd-exec-log-')), 'Logs');
});
afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
  await rm(join(logsDir, '..'), { recursive: true, force: true });
});

function entry(
  callId: string,
  timestamp: string,
  extra: Partial<ExecutionLogEntry> = {},
): ExecutionLogEntry {
  return {
    call_id: callId,
    tool: 'search_web',
    note: 'In_Progress/task.md',
    parameters: { query: 'x' },
    status: 'success',
    error: null,
    execution_time_ms: 12,
    timestamp,
    approved_by: 'auto',
    ...extra,
  };
}

async function collect(options = {}): Promise<ExecutionLogEntry[]> {
  const out: ExecutionLogEntry[] = [];
  for await (const item of readExecutionLog(logsDir, options)) out.push(item);
  return out;
}

describe('ExecutionLog', () => {
  it('writes one JSON line per entry into the file of its UTC date', async () => {
    const log = new ExecutionLog(logsDir);
    logs.push(log);
    const a = entry('a', '2026-11-21T23:59:59.900Z');
    const b = entry('b', '2026-11-22T00:00:00.100Z', {
      status: 'error',
      error: { code: 'TIMEOUT', message: 'took too long', recoverable: true },
      approved_by: 'human-modified',
      original_parameters: { query: 'y' },
    });
    const c = entry('c', '2026-11-22T01:00:00.000+02:00');
    log.append(a);
    log.append(b);
    log.append(c);
    await log.close();
    assert.deepEqual((await readdir(logsDir)).sort(), ['2026-11-21.jsonl', '2026-11-22.jsonl']);
    const day1 = (await readFile(join(logsDir, '2026-11-21.jsonl'), 'utf8')).split('\n');
    const day2 = (await readFile(join(logsDir, '2026-11-22.jsonl'), 'utf8')).split('\n');
    assert.deepEqual(
      day1.map((l) => (l === '' ? '' : JSON.parse(l))),
      [a, c, ''],
    );
    assert.deepEqual(
      day2.map((l) => (l === '' ? '' : JSON.parse(l))),
      [b, ''],
    );
  });

  it('flushes buffered lines on its own, shortly after append', async () => {
    const log = new ExecutionLog(logsDir, { flushDelayMs: 20 });
    logs.push(log);
    log.append(entry('a', '2026-01-01T10:00:00.000Z'));
    const file = join(logsDir, '2026-01-01.jsonl');
    await waitFor(async () => (await readFile(file, 'utf8').catch(() => '')).endsWith('\n'), {
      timeoutMs: 5000,
    });
    log.append(entry('b', '2026-01-01T10:00:01.000Z'));
    await waitFor(async () => (await readFile(file, 'utf8')).split('\n').length === 3);
  });

  // A 100 ms timer lost the lines of the calls finished in the last 100 ms before a SIGKILL or
  // the OOM killer, though their notes were in Done/. The line is written without any timer now:
  // with timers that never fire, it is in the file after a few turns of the event loop.
  it('writes a line at the end of the turn it was appended in, with no timer', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
    const log = new ExecutionLog(logsDir);
    logs.push(log);
    log.append(entry('now', '2026-01-02T10:00:00.000Z'));
    log.append(entry('with-it', '2026-01-02T10:00:00.500Z'));
    const file = join(logsDir, '2026-01-02.jsonl');
    let text = '';
    for (let turn = 0; turn < 2000 && text.split('\n').length < 3; turn++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      text = await readFile(file, 'utf8').catch(() => '');
    }
    assert.deepEqual(
      text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as ExecutionLogEntry).call_id),
      ['now', 'with-it'],
    );
  });

  it('tries again once a second after a failed write, not once per line', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
    await mkdir(join(logsDir, '..'), { recursive: true });
    await writeFile(logsDir, 'a file where the Logs folder should be');
    const errors: unknown[] = [];
    const log = new ExecutionLog(logsDir, { onError: (error) => errors.push(error) });
    logs.push(log);
    const turns = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    };
    log.append(entry('a', '2026-01-03T10:00:00.000Z'));
    for (let i = 0; i < 200 && errors.length === 0; i++) await turns(1);
    assert.equal(errors.length, 1);
    for (let i = 0; i < 20; i++) {
      log.append(entry(`b${i}`, '2026-01-03T10:00:01.000Z'));
      await turns(5);
    }
    assert.equal(errors.length, 1, 'no write before the retry is due');
    t.mock.timers.tick(1000);
    for (let i = 0; i < 200 && errors.length === 1; i++) await turns(1);
    await turns(50);
    assert.equal(errors.length, 2, 'one more attempt, for all the lines');
  });

  it('appends to an existing day file, starting on a fresh line after a torn one', async () => {
    const first = new ExecutionLog(logsDir);
    first.append(entry('a', '2026-03-03T10:00:00.000Z'));
    await first.close();
    await appendFile(join(logsDir, '2026-03-03.jsonl'), '{"call_id":"torn","to');
    const second = new ExecutionLog(logsDir);
    second.append(entry('b', '2026-03-03T11:00:00.000Z'));
    await second.close();
    assert.deepEqual(
      (await collect()).map((e) => e.call_id),
      ['a', 'b'],
    );
  });

  it('reports appends after close instead of throwing', async () => {
    const errors: unknown[] = [];
    const log = new ExecutionLog(logsDir, { onError: (e) => errors.push(e) });
    await log.close();
    log.append(entry('late', '2026-01-01T00:00:00.000Z'));
    assert.equal(errors.length, 1);
  });
});

// Red-team finding F4: an agent plants `Logs/<day>.jsonl` (today's, or tomorrow's ahead of time)
// as a link to a file outside the vault, or replaces Logs/ itself, and vaultd appended its lines,
// quoting the agent's arguments, to that file (~/.bashrc, say).
describe('ExecutionLog never writes through a link', () => {
  const day = '2026-06-01';
  let victim: string;
  beforeEach(async () => {
    victim = join(logsDir, '..', 'victim.sh');
    await writeFile(victim, '# outside the vault\n');
  });

  for (const kind of ['symbolic', 'hard'] as const) {
    it(`sets a day file that is a ${kind} link aside and logs into a new file`, async () => {
      await mkdir(logsDir);
      const planted = join(logsDir, `${day}.jsonl`);
      if (kind === 'symbolic') await symlink(victim, planted);
      else await link(victim, planted);
      const errors: unknown[] = [];
      const log = new ExecutionLog(logsDir, { onError: (e) => errors.push(e) });
      logs.push(log);
      log.append(entry('$(touch /tmp/pwned)', `${day}T10:00:00.000Z`));
      await log.flush();
      assert.equal(await readFile(victim, 'utf8'), '# outside the vault\n');
      assert.deepEqual(
        (await collect()).map((e) => e.call_id),
        ['$(touch /tmp/pwned)'],
        'the line is in a fresh file of the day',
      );
      const names = (await readdir(logsDir)).sort();
      assert.equal(names.length, 2);
      assert.match(names[1] ?? '', /^2026-06-01\.jsonl\.refused-\d+$/);
      assert.equal(errors.length, 1);
      assert.match(
        String(errors[0]),
        new RegExp(`was a ${kind === 'symbolic' ? 'symbolic link' : 'hard link'}`),
      );
    });
  }

  it('writes nothing when Logs/ itself is a link, and says how many lines were lost', async () => {
    const outside = join(logsDir, '..', 'outside');
    await mkdir(outside);
    await symlink(outside, logsDir);
    const errors: unknown[] = [];
    const log = new ExecutionLog(logsDir, { onError: (e) => errors.push(e) });
    logs.push(log);
    log.append(entry('a', `${day}T10:00:00.000Z`));
    log.append(entry('b', `${day}T10:00:01.000Z`));
    await log.flush();
    assert.deepEqual(await readdir(outside), []);
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /2 line\(s\) not written: .*Logs is a symbolic link/);
  });
});

describe('readExecutionLog', () => {
  it('reads every day in order, skipping torn lines and foreign files', async () => {
    const log = new ExecutionLog(logsDir);
    log.append(entry('d2', '2026-05-02T08:00:00.000Z'));
    log.append(entry('d1', '2026-05-01T08:00:00.000Z'));
    await log.close();
    await appendFile(
      join(logsDir, '2026-05-02.jsonl'),
      'garbage\n{"call_id": "x"}\n{"call_id":"torn",',
    );
    await appendFile(join(logsDir, 'notes.md'), 'not a log');
    assert.deepEqual(
      (await collect()).map((e) => e.call_id),
      ['d1', 'd2'],
    );
  });

  it('reads only entries since a time', async () => {
    const log = new ExecutionLog(logsDir);
    for (const [id, ts] of [
      ['old', '2026-05-01T08:00:00.000Z'],
      ['same-day-early', '2026-05-02T07:00:00.000Z'],
      ['new', '2026-05-02T09:00:00.000Z'],
      ['newer', '2026-05-03T09:00:00.000Z'],
    ]) {
      log.append(entry(id as string, ts as string));
    }
    await log.close();
    const since = new Date('2026-05-02T08:00:00.000Z');
    assert.deepEqual(
      (await collect({ since })).map((e) => e.call_id),
      ['new', 'newer'],
    );
  });

  it('gives nothing for a missing folder', async () => {
    assert.deepEqual(await collect(), []);
  });
});
