// Background jobs in the real sandbox: output readable while a job runs and after it ends, kill
// with everything it started, timeouts, and a restart (graceful or after a crash) reporting a job
// that was running as interrupted, never restarting it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, runCli } from '../../helpers/vault.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { processesExactly, processesWith, startShell, workDir, type ShellHost } from './helpers.ts';

interface Status {
  job_id: string;
  state: string;
  exit_code: number | null;
  reason: string | null;
  tail: string;
}
interface Output {
  output: string;
  next_offset: number;
  done: boolean;
  state: string;
}

describe('shell background jobs', { timeout: 120_000 }, () => {
  let shell: ShellHost;
  const status = async (jobId: string): Promise<Status> =>
    (await shell.call('shell_job_status', { job_id: jobId })).data as Status;
  const output = async (jobId: string, offset = 0, maxBytes?: number): Promise<Output> =>
    (
      await shell.call('shell_job_output', {
        job_id: jobId,
        offset,
        ...(maxBytes === undefined ? {} : { max_bytes: maxBytes }),
      })
    ).data as Output;
  const start = async (command: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const result = await shell.call('shell_background', { command, cwd: 'work', ...extra });
    assert.equal(result.status, 'success', result.content);
    return (result.data as { job_id: string }).job_id;
  };

  before(async () => {
    shell = await startShell({ max_jobs: 3 });
    await workDir(shell.vault, 'work');
  });
  after(async () => {
    await shell.close();
  });

  it('returns a job id at once; output is readable while the job runs and after it ends', async () => {
    const id = await start(
      'echo first; while [ ! -f go ]; do sleep 0.05; done; echo second >&2; exit 3',
    );
    assert.match(id, /^job_[0-9a-f]{12}$/);
    await waitFor(async () => (await output(id)).output === 'first\n', {
      message: 'the first line while it runs',
    });
    const running = await status(id);
    assert.equal(running.state, 'running');
    assert.equal((await output(id)).done, false);
    await writeFile(join(shell.vault, 'work', 'go'), '');
    const ended = await waitFor(async () => {
      const s = await status(id);
      return s.state === 'exited' ? s : undefined;
    });
    assert.equal(ended.exit_code, 3);
    assert.equal(ended.tail, 'first\nsecond\n');
    const all = await output(id);
    assert.deepEqual([all.output, all.done, all.state], ['first\nsecond\n', true, 'exited']);
    const part = await output(id, 2, 4);
    assert.deepEqual([part.output, part.next_offset, part.done], ['rst\n', 6, false]);
    const rest = await output(id, part.next_offset);
    assert.deepEqual([rest.output, rest.done], ['second\n', true]);
  });

  it('kills a job with every process it started, setsid ones included', async () => {
    const a = `3611.${process.pid}`;
    const b = `3612.${process.pid}`;
    const id = await start(`sleep ${a} & setsid sleep ${b} & echo up; wait`);
    await waitFor(async () => (await processesWith(b)).length > 0, { message: 'the job runs' });
    const killed = await shell.call('shell_job_kill', { job_id: id });
    assert.equal(killed.status, 'success', killed.content);
    assert.equal((killed.data as Status).state, 'killed');
    await waitFor(
      async () => (await processesWith(a)).length + (await processesWith(b)).length === 0,
      {
        timeoutMs: 10_000,
        message: 'every process of the job is gone',
      },
    );
    const again = await shell.call('shell_job_kill', { job_id: id });
    assert.equal((again.data as Status).state, 'killed', 'killing an ended job changes nothing');
  });

  it('kills a job at its timeout', async () => {
    const marker = `3613.${process.pid}`;
    const id = await start(`sleep ${marker}`, { timeout_s: 1 });
    await waitFor(async () => (await status(id)).state === 'timed_out', {
      message: 'timed out',
    });
    await waitFor(async () => (await processesWith(marker)).length === 0, {
      message: 'its sleep is gone',
    });
  });

  it('refuses an unknown or malformed job id, and more jobs than max_jobs', async () => {
    for (const jobId of ['job_000000000000', '../../../etc/passwd', 'job_../x']) {
      const result = await shell.call('shell_job_output', { job_id: jobId });
      assert.equal(result.error?.code, 'INVALID_PARAMS', jobId);
    }
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await start(`sleep 36${20 + i}.${process.pid}`));
    const refused = await shell.call('shell_background', { command: 'touch fourth', cwd: 'work' });
    assert.equal(refused.error?.code, 'EXECUTION_FAILED');
    assert.match(refused.error?.message ?? '', /max_jobs/);
    assert.equal(refused.metadata.may_have_acted, false);
    for (const id of ids) await shell.call('shell_job_kill', { job_id: id });
    assert.equal(existsSync(join(shell.vault, 'work', 'fourth')), false);
  });

  it('counts jobs being started: calls made at once start no more than max_jobs (review finding)', async () => {
    // Each passed the check while none was counted yet: eight jobs ran under max_jobs 1.
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        shell.call('shell_background', { command: `sleep 37${i}.${process.pid}`, cwd: 'work' }),
      ),
    );
    const started = results.filter((r) => r.status === 'success');
    assert.equal(started.length, 3, results.map((r) => r.content).join('\n'));
    for (const r of started)
      await shell.call('shell_job_kill', { job_id: (r.data as { job_id: string }).job_id });
  });

  it('moves on through output whose character is wider than max_bytes, or cut at the offset (review finding)', async () => {
    const id = await start("printf 'é€x'");
    await waitFor(async () => (await status(id)).state === 'exited');
    let offset = 0;
    const seen: string[] = [];
    for (let i = 0; i < 10 && offset < 6; i++) {
      const part = await output(id, offset, 1);
      assert.ok(part.next_offset > offset, `stalled at ${offset}`);
      seen.push(part.output);
      offset = part.next_offset;
    }
    assert.equal(offset, 6);
    assert.equal((await output(id, 1, 64)).next_offset, 6, 'from inside a character');
  });

  it('records a job that ended on its own as exited, though a kill came after (review finding)', async () => {
    // A kill arriving while vaultd swept what the job left behind relabelled it killed.
    for (let i = 0; i < 5; i++) {
      const id = await start('exit 7');
      await shell.call('shell_job_kill', { job_id: id });
      await waitFor(async () => (await status(id)).state !== 'running');
      const ended = await status(id);
      if (ended.exit_code === 7) assert.equal(ended.state, 'exited', JSON.stringify(ended));
    }
  });
});

describe('shell background jobs across restarts', { timeout: 120_000 }, () => {
  it('kills running jobs when the pack stops, and reports them interrupted after a restart', async () => {
    const first = await startShell();
    await workDir(first.vault, 'work');
    const marker = `3631.${process.pid}`;
    const started = await first.call('shell_background', {
      command: `sleep ${marker}`,
      cwd: 'work',
    });
    const id = (started.data as { job_id: string }).job_id;
    await waitFor(async () => (await processesWith(marker)).length > 0, { message: 'running' });
    await first.close({ keep: true });
    // Killed by the stop; under load /proc listed the sandbox's `sleep` a moment after the stop
    // returned (once in a full run), so its going is waited for briefly. Without the kill it
    // would run for an hour.
    await waitFor(async () => (await processesWith(marker)).length === 0, {
      timeoutMs: 2_000,
      message: 'stopping the pack killed the job',
    });
    const second = await startShell({}, first.vault);
    try {
      const result = await second.call('shell_job_status', { job_id: id });
      assert.equal((result.data as Status).state, 'interrupted', result.content);
      const status = await runCli([
        'status',
        '--config',
        join(first.vault, 'vaultd.yaml'),
        '--json',
      ]);
      assert.equal(status.code, 0, status.stderr);
      const listed = (JSON.parse(status.stdout) as { jobs: { id: string; state: string }[] }).jobs;
      assert.deepEqual(
        listed.map((j) => [j.id, j.state]),
        [[id, 'interrupted']],
        'vaultd status lists the job',
      );
    } finally {
      await second.close();
    }
  });

  it('reports a job that was running when vaultd crashed as interrupted, and never restarts it', async () => {
    const first = await startShell();
    await workDir(first.vault, 'work');
    await first.close({ keep: true });
    const marker = `3632.${process.pid}`;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'test/tools/shell/fixtures/start-job.ts'),
        first.vault,
        `sleep ${marker}`,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const line = await waitFor(
      () => {
        const first = out.includes('\n') ? out.slice(0, out.indexOf('\n')) : '';
        return first.includes('job_') ? first : undefined;
      },
      { timeoutMs: 30_000, message: 'the child started a job' },
    );
    const id = (JSON.parse(line) as { job_id: string }).job_id;
    // The sleep itself, not the sandbox still being set up (that window is the restart sweep's).
    await waitFor(async () => (await processesExactly(`sleep ${marker}`)).length > 0, {
      message: 'running',
    });
    child.kill('SIGKILL');
    await waitFor(async () => (await processesWith(marker)).length === 0, {
      message: 'the job died with the process that started it',
    });
    const second = await startShell({}, first.vault);
    try {
      const result = await second.call('shell_job_status', { job_id: id });
      const s = result.data as Status;
      assert.equal(s.state, 'interrupted', result.content);
      assert.match(s.reason ?? '', /not restarted/);
      assert.deepEqual(await processesWith(marker), [], 'not restarted');
    } finally {
      await second.close();
    }
  });

  it('kills at start what is left of a sandbox recorded running (found by its tag)', async () => {
    const first = await startShell();
    await first.close({ keep: true });
    const tag = `VAULTD_SANDBOX_${'ab'.repeat(12)}${process.pid}`;
    const id = 'job_0123456789ab';
    const dir = join(first.vault, '.vaultd', 'packs', 'shell', 'jobs');
    await writeFile(
      join(dir, `${id}.json`),
      JSON.stringify({
        id,
        command: 'sleep 3700',
        cwd: 'work',
        started_at: new Date().toISOString(),
        ended_at: null,
        state: 'running',
        exit_code: null,
        signal: null,
        timeout_s: 60,
        reason: null,
        tag,
      }),
    );
    // A stand-in for a sandbox that outlived a crash: its command line carries the tag.
    const survivor = spawn('/bin/bash', ['-c', 'while :; do sleep 0.2; done', tag], {
      stdio: 'ignore',
    });
    const gone = new Promise((resolve) => survivor.on('exit', resolve));
    await waitFor(async () => (await processesWith(tag)).length > 0, { message: 'running' });
    const second = await startShell({}, first.vault);
    try {
      await gone;
      const result = await second.call('shell_job_status', { job_id: id });
      assert.equal((result.data as Status).state, 'interrupted', result.content);
    } finally {
      await second.close();
    }
  });
});
