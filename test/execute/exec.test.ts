import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallProcesses } from '../../src/execute/exec.ts';
import { Executor } from '../../src/execute/index.ts';
import { registryWith, waitFor } from './helpers.ts';

const sh = (script: string): [string, string[]] => ['/bin/sh', ['-c', script]];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('CallProcesses: child processes of a call', () => {
  it('runs a program by argument vector and captures its output and exit code', async () => {
    const processes = new CallProcesses(new AbortController().signal);
    const result = await processes.exec('/bin/echo', ['a b', '$HOME', ';', 'c']);
    assert.equal(result.stdout, 'a b $HOME ; c\n', 'arguments are never split or expanded');
    assert.equal(result.exitCode, 0);
    assert.equal(result.killed, false);
    const failing = await processes.exec(...sh('echo oops >&2; exit 3'));
    assert.equal(failing.exitCode, 3);
    assert.equal(failing.stderr, 'oops\n');
  });

  it('passes only the environment it is given', async () => {
    const processes = new CallProcesses(new AbortController().signal);
    process.env['VAULTD_TEST_SECRET'] = 'leak';
    try {
      const result = await processes.exec('/usr/bin/env', [], { env: { ONLY: 'this' } });
      assert.equal(result.stdout, 'ONLY=this\n');
    } finally {
      delete process.env['VAULTD_TEST_SECRET'];
    }
  });

  it('caps the output it keeps, says how much was dropped, and keeps draining', async () => {
    const processes = new CallProcesses(new AbortController().signal);
    const result = await processes.exec(...sh('head -c 300000 /dev/zero | tr "\\0" x'), {
      maxOutputBytes: 1000,
    });
    assert.equal(result.truncated, true);
    assert.ok(result.stdout.startsWith('x'.repeat(1000)));
    assert.match(result.stdout, /299000 more bytes not kept/);
    assert.equal(result.exitCode, 0);
  });

  it('kills the whole process group, grandchildren included, on timeout', async () => {
    const processes = new CallProcesses(new AbortController().signal);
    const result = await processes.exec(...sh('sleep 30 & echo $!; wait'), { timeoutMs: 200 });
    const grandchild = Number(result.stdout.trim());
    assert.ok(grandchild > 0);
    assert.equal(result.killed, true);
    assert.equal(await processes.idle(5000), true);
    await waitFor(() => !alive(grandchild), 5000, 'the grandchild to be gone');
  });

  it('kills everything when the call is aborted, and what a finished program left behind', async () => {
    const controller = new AbortController();
    const processes = new CallProcesses(controller.signal);
    const left = await processes.exec(...sh('sleep 30 >/dev/null 2>&1 & echo $!'));
    const orphan = Number(left.stdout.trim());
    await waitFor(() => !alive(orphan), 5000, 'the background process of a finished program');
    const running = processes.exec(...sh('sleep 30'));
    setTimeout(() => controller.abort(), 100);
    const result = await running;
    assert.equal(result.killed, true);
    assert.equal(await processes.idle(5000), true);
    await assert.rejects(processes.exec('/bin/true', []), /aborted/);
  });
});

describe('Executor: a call holds its slot until its processes are gone', () => {
  it('never runs more process groups than the cap, even past a timeout', async () => {
    let most = 0;
    let running = 0;
    const { registry } = registryWith({
      name: 'spawner',
      handler: async (_args, ctx) => {
        running += 1;
        most = Math.max(most, running);
        try {
          // Ignores SIGTERM for a moment: the group outlives the timeout briefly.
          return await ctx.exec('/bin/sh', ['-c', 'trap "" TERM; sleep 0.5']);
        } finally {
          running -= 1;
        }
      },
    });
    const executor = new Executor(registry, { concurrency: 1, timeoutMs: 100 });
    const results = await Promise.all(
      [1, 2, 3].map((n) => executor.execute({ id: `s${n}`, name: 'spawner', arguments: {} })),
    );
    assert.deepEqual(
      results.map((r) => r.error?.code),
      ['TIMEOUT', 'TIMEOUT', 'TIMEOUT'],
    );
    assert.equal(most, 1);
    await waitFor(() => executor.active === 0, 10_000, 'every slot free');
  });
});
