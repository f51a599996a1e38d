// shell_exec in the real bubblewrap sandbox, through the pack host and the executor: what a
// command may do (its cwd, its output, its exit code) and every way out an agent would try.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../../helpers/vault.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import {
  execData,
  giveToSandbox,
  processesWith,
  SANDBOX_UID,
  startShell,
  workDir,
  type ShellHost,
} from './helpers.ts';

describe('shell_exec in the sandbox', { timeout: 120_000 }, () => {
  let shell: ShellHost;
  before(async () => {
    shell = await startShell({
      max_timeout_s: 20,
      resources: { processes: 48, memory_mb: 256, cpu_s: 10 },
    });
    await workDir(shell.vault, 'work');
  });
  after(async () => {
    await shell.close();
  });

  it('runs a command line in its cwd and returns its output and exit code', async () => {
    const ok = await shell.call('shell_exec', {
      command: 'echo "hello $(basename "$PWD")"; echo oops >&2',
      cwd: 'work',
    });
    assert.equal(ok.status, 'success', ok.content);
    assert.deepEqual(
      { ...execData(ok), duration_ms: 0 },
      {
        exit_code: 0,
        signal: null,
        timed_out: false,
        stdout: 'hello work\n',
        stderr: 'oops\n',
        truncated: false,
        duration_ms: 0,
      },
    );
    const failed = await shell.call('shell_exec', { command: 'echo partial; exit 3', cwd: 'work' });
    assert.equal(failed.error?.code, 'EXECUTION_FAILED');
    assert.match(failed.error?.message ?? '', /exited with code 3/);
    assert.equal(execData(failed).exit_code, 3);
    assert.equal(execData(failed).stdout, 'partial\n');
    assert.equal(failed.metadata.may_have_acted, true, 'a failed command may have acted');
    assert.equal(failed.metadata.attempts, 1, 'never retried');
  });

  it('keeps writes inside the working directory: .., absolute paths, links out, /etc, /usr and the host /tmp are refused', async () => {
    const outside = await workDir(shell.vault, 'outside');
    await symlink(outside, join(shell.vault, 'work', 'link-out'));
    const hostTmp = `/tmp/vaultd-shell-escape-${process.pid}`;
    const attempts = [
      'touch ../outside/dotdot',
      `touch ${join(outside, 'absolute')}`,
      'touch link-out/through-link',
      'touch /etc/vaultd-escape',
      'touch /usr/vaultd-escape',
      `touch ${hostTmp}`,
      `mkdir -p ${shell.vault}/Needs_Action && touch ${shell.vault}/Needs_Action/planted.md`,
    ];
    for (const command of attempts) {
      await shell.call('shell_exec', { command, cwd: 'work' });
    }
    for (const path of [
      join(outside, 'dotdot'),
      join(outside, 'absolute'),
      join(outside, 'through-link'),
      '/etc/vaultd-escape',
      '/usr/vaultd-escape',
      hostTmp,
      join(shell.vault, 'Needs_Action', 'planted.md'),
    ]) {
      assert.equal(existsSync(path), false, `${path} was written from the sandbox`);
    }
    const inside = await shell.call('shell_exec', {
      command: 'echo kept > inside.txt && echo scratch > /tmp/scratch && cat /tmp/scratch',
      cwd: 'work',
    });
    assert.equal(inside.status, 'success', inside.content);
    assert.equal(await readFile(join(shell.vault, 'work', 'inside.txt'), 'utf8'), 'kept\n');
  });

  it('refuses a working directory outside the vault or in vaultd’s folders before running anything', async () => {
    for (const cwd of ['..', '/etc', '/tmp', 'work/../..', 'Done', '.vaultd', 'work\nx']) {
      const result = await shell.call('shell_exec', { command: 'touch planted', cwd });
      assert.ok(
        ['PERMISSION_DENIED', 'INVALID_PARAMS'].includes(result.error?.code ?? ''),
        `${cwd}: ${result.content}`,
      );
      assert.equal(result.metadata.may_have_acted, false);
    }
    const missing = await shell.call('shell_exec', { command: 'true', cwd: 'nowhere' });
    assert.equal(missing.error?.code, 'INVALID_PARAMS');
  });

  it('hides vaultd’s state and keeps its folders read-only when the vault itself is the cwd', async () => {
    await writeFile(join(shell.vault, 'Dashboard.md'), '# Dashboard\n');
    const seen = await shell.call('shell_exec', {
      command: 'ls -A .vaultd | wc -l; ls Done >/dev/null && echo done-visible',
      cwd: '.',
    });
    assert.equal(seen.status, 'success', seen.content);
    assert.equal(execData(seen).stdout, '0\ndone-visible\n', 'an empty .vaultd, Done/ readable');
    const writes = [
      'touch Done/forged.md',
      'touch Approved/forged.md',
      'touch Pending_Approval/forged.md',
      'echo hacked > Dashboard.md',
      'touch .vaultd/forged',
      'rm -rf Done',
      'mv Approved Approved2',
    ];
    for (const command of writes) {
      const result = await shell.call('shell_exec', { command, cwd: '.' });
      assert.equal(result.status, 'error', `${command} succeeded`);
    }
    assert.equal(existsSync(join(shell.vault, 'Done', 'forged.md')), false);
    assert.equal(existsSync(join(shell.vault, 'Approved', 'forged.md')), false);
    assert.equal(existsSync(join(shell.vault, 'Approved')), true);
    assert.equal(existsSync(join(shell.vault, '.vaultd', 'forged')), false);
    assert.equal(await readFile(join(shell.vault, 'Dashboard.md'), 'utf8'), '# Dashboard\n');
    assert.equal(existsSync(join(shell.vault, '.vaultd', 'packs', 'shell', 'jobs')), true);
    // A folder at the top level a tool may write stays writable; the top level's files and new
    // entries are read-only (the vault is mounted read-only, its writable folders bound on their
    // own: review finding).
    await writeFile(join(shell.vault, 'note.txt'), '', { mode: 0o666 });
    await chmod(join(shell.vault, 'note.txt'), 0o666);
    const rootWrite = await shell.call('shell_exec', { command: 'echo ok > note.txt', cwd: '.' });
    assert.equal(rootWrite.status, 'error', rootWrite.content);
    assert.equal(await readFile(join(shell.vault, 'note.txt'), 'utf8'), '');
    const inFolder = await shell.call('shell_exec', { command: 'echo ok > work/in.txt', cwd: '.' });
    assert.equal(inFolder.status, 'success', inFolder.content);
    const made = await shell.call('shell_exec', { command: 'mkdir .obsidian', cwd: '.' });
    assert.equal(made.status, 'error', made.content);
    assert.equal(existsSync(join(shell.vault, '.obsidian')), false);
  });

  it('shows no process, file or variable of the host', async () => {
    process.env['VAULTD_SHELL_SECRET'] = 'leak-me';
    try {
      const result = await shell.call('shell_exec', {
        command: 'env; ls /proc | grep -c "^[0-9]"; ls /home /root /run /var 2>&1; id -u',
        cwd: 'work',
      });
      const { stdout } = execData(result);
      assert.doesNotMatch(stdout, /leak-me|VAULTD_SANDBOX_/);
      const [procs] = stdout.match(/^\d+$/m) ?? [];
      assert.ok(Number(procs) < 10, `only the sandbox's processes are visible: ${procs}`);
      assert.match(stdout, /ls: cannot access '\/home'/);
      assert.match(stdout, /ls: cannot access '\/root'/);
    } finally {
      delete process.env['VAULTD_SHELL_SECRET'];
    }
  });

  it('has no network: a server on the host’s loopback cannot be reached', async () => {
    const { server, port, connections } = await listen();
    try {
      const result = await shell.call('shell_exec', {
        command: `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`,
        cwd: 'work',
      });
      assert.equal(result.status, 'error');
      assert.doesNotMatch(execData(result).stdout, /connected/);
      assert.equal(connections(), 0);
    } finally {
      server.close();
    }
  });

  it('stops a fork bomb at the process limit, leaves none of it behind, and the next call still runs', async () => {
    const marker = `bomb-${process.pid}`;
    const bomb = await shell.call('shell_exec', {
      command: `bomb() { bomb | bomb & }; bomb; sleep 2 # ${marker}`,
      cwd: 'work',
      timeout_s: 8,
    });
    assert.match(execData(bomb).stderr, /Resource temporarily unavailable/, 'the limit was hit');
    await waitFor(async () => (await processesWith(marker)).length === 0, {
      timeoutMs: 10_000,
      message: 'no process of the bomb is left',
    });
    const next = await shell.call('shell_exec', { command: 'echo next', cwd: 'work' });
    assert.equal(execData(next).stdout, 'next\n', next.content);
  });

  it('stops a memory hog at the address-space limit', async () => {
    const hog = await shell.call('shell_exec', {
      command: 'a=xxxxxxxxxxxxxxxx; while :; do a=$a$a; done',
      cwd: 'work',
      timeout_s: 15,
    });
    assert.equal(hog.error?.code, 'EXECUTION_FAILED', hog.content);
    assert.equal(execData(hog).timed_out, false, 'the limit stopped it, not the timeout');
  });

  it('kills the command and every process it started at the timeout, setsid ones included', async () => {
    const a = `3601.${process.pid}`;
    const b = `3602.${process.pid}`;
    const result = await shell.call('shell_exec', {
      command: `sleep ${a} & setsid sleep ${b} & (setsid bash -c "sleep ${b}" &); echo started; wait`,
      cwd: 'work',
      timeout_s: 1,
    });
    assert.equal(result.error?.code, 'TIMEOUT', result.content);
    assert.equal(execData(result).timed_out, true);
    assert.equal(execData(result).stdout, 'started\n');
    await waitFor(
      async () => (await processesWith(a)).length + (await processesWith(b)).length === 0,
      {
        timeoutMs: 10_000,
        message: 'every sleep is gone',
      },
    );
  });

  it('kills the command and everything it started when the call is aborted (daemon shutdown)', async () => {
    const marker = `3605.${process.pid}`;
    const controller = new AbortController();
    const pending = shell.executor.execute(
      {
        id: `abort_${process.pid}`,
        name: 'shell_exec',
        arguments: { command: `setsid sleep ${marker} & sleep ${marker}`, cwd: 'work' },
      },
      { signal: controller.signal },
    );
    await waitFor(async () => (await processesWith(marker)).length >= 2, {
      message: 'the command runs',
    });
    controller.abort();
    const result = await pending;
    assert.equal(result.status, 'interrupted', result.content);
    await waitFor(async () => (await processesWith(marker)).length === 0, {
      timeoutMs: 10_000,
      message: 'every sleep is gone',
    });
  });

  it('sets only allowed variables, refuses other names and NUL bytes, and passes values as data', async () => {
    const ok = await shell.call('shell_exec', {
      command: 'printf "%s|%s" "$TZ" "$LANG"',
      cwd: 'work',
      env: { TZ: '--bind / /', LANG: 'C.UTF-8' },
    });
    assert.equal(execData(ok).stdout, '--bind / /|C.UTF-8', ok.content);
    for (const env of [
      { LD_PRELOAD: '/tmp/x.so' },
      { PATH: '/tmp' },
      { '--bind': 'x' },
      { TZ: 'UTC\u0000--bind / /' },
    ]) {
      const refused = await shell.call('shell_exec', { command: 'true', cwd: 'work', env });
      assert.equal(refused.error?.code, 'INVALID_PARAMS', JSON.stringify(env));
    }
    const nul = await shell.call('shell_exec', { command: 'echo a\u0000b', cwd: 'work' });
    assert.equal(nul.error?.code, 'INVALID_PARAMS');
  });

  it('runs a command that starts with "-" as a command, never as an option', async () => {
    for (const command of ['--version', '-c id', '--rcfile /etc/passwd -i']) {
      const result = await shell.call('shell_exec', { command, cwd: 'work' });
      assert.equal(execData(result).exit_code, 127, `${command}: ${result.content}`);
      assert.doesNotMatch(execData(result).stdout, /GNU bash|uid=/);
    }
  });

  it('refuses a timeout above the configured maximum before anything runs', async () => {
    const result = await shell.call('shell_exec', { command: 'true', cwd: 'work', timeout_s: 21 });
    assert.equal(result.error?.code, 'INVALID_PARAMS');
    assert.match(result.error?.message ?? '', /20/);
    const schema = shell.registry.get('shell_exec')?.inputSchema as {
      properties: { timeout_s: { maximum: number } };
    };
    assert.equal(schema.properties.timeout_s.maximum, 20, 'the limit is in the exported schema');
  });
});

describe('shell pack configuration', { timeout: 60_000 }, () => {
  it('reaches the network only with network: true', async () => {
    const shell = await startShell({ network: true });
    const { server, port, connections } = await listen();
    try {
      await workDir(shell.vault, 'work');
      const result = await shell.call('shell_exec', {
        command: `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`,
        cwd: 'work',
      });
      assert.equal(execData(result).stdout, 'connected\n', result.content);
      await waitFor(() => connections() > 0, { message: 'the server saw the connection' });
    } finally {
      server.close();
      await shell.close();
    }
  });

  it('refuses every call with the reason when bubblewrap cannot run, and runs with sandbox: none', async () => {
    const missing = '/nonexistent/bwrap';
    const shell = await startShell({ bwrap_path: missing });
    try {
      await workDir(shell.vault, 'work');
      for (const [name, args] of [
        ['shell_exec', { command: 'touch ran', cwd: 'work' }],
        ['shell_background', { command: 'touch ran', cwd: 'work' }],
      ] as const) {
        const result = await shell.call(name, args);
        assert.equal(result.error?.code, 'EXECUTION_FAILED');
        assert.match(result.error?.message ?? '', /\/nonexistent\/bwrap is not installed/);
      }
      assert.equal(existsSync(join(shell.vault, 'work', 'ran')), false);
    } finally {
      await shell.close();
    }
    const bare = await startShell({ bwrap_path: missing, sandbox: 'none' });
    try {
      await workDir(bare.vault, 'work');
      const result = await bare.call('shell_exec', { command: 'echo "$HOME" > ran', cwd: 'work' });
      assert.equal(result.status, 'success', result.content);
      assert.equal(await readFile(join(bare.vault, 'work', 'ran'), 'utf8'), '/tmp\n');
    } finally {
      await bare.close();
    }
  });

  it(
    'refuses, before running, a cwd the run_as user cannot enter when vaultd runs as root',
    {
      skip: process.getuid?.() !== 0 && 'only as root',
    },
    async () => {
      const shell = await startShell();
      try {
        const closed = await workDir(shell.vault, 'closed');
        await mkdir(join(closed, 'inner'));
        await chmod(closed, 0o700);
        await chown(closed, 0, 0);
        const result = await shell.call('shell_exec', { command: 'true', cwd: 'closed/inner' });
        assert.equal(result.error?.code, 'EXECUTION_FAILED');
        assert.match(result.error?.message ?? '', /uid 65534 .* cannot enter .*closed;/);
        assert.equal(result.metadata.may_have_acted, false);
      } finally {
        await shell.close();
      }
    },
  );

  it('is off unless enabled, and refuses unknown keys', async () => {
    const { BUILTIN_PACKS } = await import('../../../src/tools/index.ts');
    const pack = BUILTIN_PACKS.find((p) => p.name === 'shell');
    assert.equal(pack?.enabledByDefault, false);
    await assert.rejects(startShell({ sandbox: 'docker' }), /sandbox/);
    await assert.rejects(
      startShell({ max_timeout_s: 10, default_timeout_s: 20 }),
      /default_timeout_s/,
    );
  });
});

async function listen(): Promise<{ server: Server; port: number; connections: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { server, port, connections: () => count };
}

describe('shell pack run by an unprivileged vaultd', { timeout: 120_000 }, () => {
  it(
    'sandboxes without setpriv: same refusals, same limits',
    {
      skip: process.getuid?.() !== 0 && 'the other tests already run unprivileged',
    },
    async () => {
      const vault = await mkdtemp(join(tmpdir(), 'vaultd-shell-user-'));
      try {
        await giveToSandbox(vault);
        const marker = `ubomb-${process.pid}`;
        const child = spawn(
          'setpriv',
          [
            `--reuid=${SANDBOX_UID}`,
            `--regid=${SANDBOX_UID}`,
            '--clear-groups',
            '--',
            process.execPath,
            '--import',
            'tsx',
            join(ROOT, 'test/tools/shell/fixtures/run-unprivileged.ts'),
            vault,
            marker,
          ],
          {
            cwd: ROOT,
            env: { PATH: '/usr/bin:/bin', HOME: '/tmp' },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        const code = await new Promise((resolve) => child.on('close', resolve));
        assert.equal(code, 0, err.slice(-2000));
        type Run = { status: string; stdout: string; stderr: string };
        const r = JSON.parse(out) as {
          uid: number;
          id: Run;
          escape: Run;
          vaultd: Run;
          bomb: Run;
          next: Run;
        };
        assert.equal(r.uid, SANDBOX_UID);
        assert.equal(r.id.stdout, `${SANDBOX_UID}\n`, JSON.stringify(r.id));
        assert.equal(await readFile(join(vault, 'work', 'inside.txt'), 'utf8'), 'inside\n');
        assert.equal(r.escape.status, 'error');
        assert.equal(existsSync(join(vault, 'outside', 'dotdot')), false);
        assert.equal(existsSync('/etc/unprivileged-escape'), false);
        assert.equal(r.vaultd.status, 'error');
        assert.match(r.vaultd.stdout, /^0\n/);
        assert.equal(await readFile(join(vault, 'Dashboard.md'), 'utf8'), 'dashboard\n');
        assert.match(r.bomb.stderr, /Resource temporarily unavailable/);
        assert.equal(r.next.stdout, 'next\n');
        assert.deepEqual(await processesWith(marker), []);
      } finally {
        await rm(vault, { recursive: true, force: true });
      }
    },
  );
});
