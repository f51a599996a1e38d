import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startPackSession } from '../../src/cli/pack-session.ts';
import { loadSetup } from '../../src/cli/setup.ts';
import { makeVault, type TempVault } from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { processesWith } from '../tools/shell/helpers.ts';

// `vaultd check` and `vaultd tools` start the config's packs to list their tools, without the
// vault's lock: a daemon may be running on the vault meanwhile.
describe('the packs started by vaultd check and vaultd tools', () => {
  let vault: TempVault;
  before(async () => {
    vault = await makeVault(
      'tools:\n  shell:\n    enabled: true\n    sandbox: none\n  git:\n    enabled: true\n',
    );
  });
  after(async () => {
    await vault.cleanup();
  });

  it("leave a running daemon's background jobs and git HOME alone", async () => {
    // A background job of the daemon running on this vault: its record, and its sandbox's process
    // (found by the tag in its command line).
    const tag = `VAULTD_SANDBOX_${'cd'.repeat(12)}${process.pid}`;
    const jobs = join(vault.root, '.vaultd', 'packs', 'shell', 'jobs');
    await mkdir(jobs, { recursive: true });
    const record = join(jobs, 'job_0123456789cd.json');
    await writeFile(
      record,
      JSON.stringify({
        id: 'job_0123456789cd',
        command: 'sleep 3700',
        cwd: '.',
        started_at: new Date().toISOString(),
        ended_at: null,
        state: 'running',
        exit_code: null,
        signal: null,
        timeout_s: 3700,
        reason: null,
        tag,
      }),
    );
    const job = spawn('/bin/bash', ['-c', 'while :; do sleep 0.2; done', tag], { stdio: 'ignore' });
    const home = join(vault.root, '.vaultd', 'packs', 'git', 'home');
    await mkdir(home, { recursive: true });
    await writeFile(join(home, '.gitconfig'), '[user]\n\tname = daemon\n');
    try {
      await waitFor(async () => (await processesWith(tag)).length > 0, { message: 'job running' });
      const session = await startPackSession(await loadSetup({ config: vault.configPath }));
      try {
        assert.ok(session.registry.get('shell_background'), 'the shell pack started');
        assert.ok(session.registry.get('git_status'), 'the git pack started');
      } finally {
        await session.stop();
      }
      assert.notEqual(job.exitCode ?? job.signalCode, 'SIGKILL');
      assert.deepEqual(await processesWith(tag), [job.pid], 'the job still runs');
      const after = JSON.parse(await readFile(record, 'utf8')) as { state: string };
      assert.equal(after.state, 'running', 'its record still says running');
      assert.ok(existsSync(join(home, '.gitconfig')), "the git pack's HOME is the daemon's still");
    } finally {
      job.kill('SIGKILL');
    }
  });
});
