// The git pack through the config loader, the pack host and the executor: its config section is
// checked, its tools are registered with their roots, safe calls run, cautious ones run in
// scratch repositories, dangerous ones wait for a human, and bad parameters are results.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApprovalGate } from '../../../src/approval/gate.ts';
import { compilePolicy } from '../../../src/approval/policy.ts';
import { loadConfig } from '../../../src/config/index.ts';
import { Executor } from '../../../src/execute/index.ts';
import { silentLogger } from '../../../src/observe/logger.ts';
import { ToolRegistry } from '../../../src/protocol/index.ts';
import { PackHost, packConfigSchemas } from '../../../src/tools/host.ts';
import { BUILTIN_PACKS } from '../../../src/tools/index.ts';
import { ensureLayout, resolveLayout } from '../../../src/vault/index.ts';
import { git } from './harness.ts';

describe('git pack through the host and the executor', { timeout: 60_000 }, () => {
  let dir: string;
  let vault: string;
  let host: PackHost;
  let executor: Executor;
  let silent: Server;
  let home: string;

  before(async () => {
    // A remote that accepts the connection and never answers.
    silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    dir = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-git-pipe-')));
    vault = join(dir, 'vault');
    await mkdir(join(dir, 'extra'), { recursive: true });
    await mkdir(vault);
    git(dir, 'init', '-q', '-b', 'main', vault);
    await writeFile(join(vault, 'note.md'), 'hello\n');
    git(vault, 'add', '.');
    git(vault, 'commit', '-q', '-m', 'first note');
    const port = (silent.address() as AddressInfo).port;
    git(vault, 'remote', 'add', 'slow', `http://127.0.0.1:${port}/repo.git`);
    const file = join(vault, 'vaultd.yaml');
    await writeFile(
      file,
      [
        'vault: .',
        'tools:',
        '  git:',
        '    enabled: true',
        `    roots: [{ name: extra, path: ${join(dir, 'extra')} }]`,
        "    scratch_repos: ['.']",
        '    author: { name: Pipeline, email: pipeline@example.com }',
        '    limits: { git_push: { timeout_ms: 1500 } }',
        '',
      ].join('\n'),
    );
    const config = loadConfig({ file, env: {}, toolSchemas: packConfigSchemas(BUILTIN_PACKS) });
    const layout = resolveLayout(config);
    await ensureLayout(layout);
    home = join(layout.state, 'packs', 'git', 'home');
    await mkdir(home, { recursive: true });
    await writeFile(join(home, '.gitconfig'), '[core]\n\tfsmonitor = /tmp/left-behind\n');
    const registry = new ToolRegistry();
    host = new PackHost({ packs: BUILTIN_PACKS, config, layout, registry, logger: silentLogger() });
    await host.start();
    executor = new Executor(registry, {
      gate: new ApprovalGate({ policy: compilePolicy({ allow: ['git_push(remote:slow)'] }) }),
      runtime: (tool) => host.runtime(tool),
      timeoutMs: 20_000,
      retry: { attempts: 1, baseDelayMs: 1 },
    });
  });
  after(async () => {
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
    await host.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses an unknown key in tools.git when the config loads', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, `vault: ${vault}\ntools:\n  git:\n    run_hook: true\n`);
    assert.throws(
      () => loadConfig({ file, env: {}, toolSchemas: packConfigSchemas(BUILTIN_PACKS) }),
      /run_hook/,
    );
  });

  it('starts with an empty HOME for git', async () => {
    assert.ok(existsSync(home));
    assert.equal(existsSync(join(home, '.gitconfig')), false);
  });

  it('runs safe calls at once with structured data, leaving vaultd state out', async () => {
    await writeFile(join(vault, 'note.md'), 'hello again\n');
    const status = await executor.execute({ id: 's', name: 'git_status', arguments: {} });
    assert.equal(status.status, 'success', status.content);
    const data = status.data as { branch: string; files: { path: string }[] };
    assert.equal(data.branch, 'main');
    // vaultd's config file, kept in the vault here, is left out like its state folder.
    assert.deepEqual(
      data.files.map((f) => f.path),
      ['note.md'],
    );
    const log = await executor.execute({ id: 'l', name: 'git_log', arguments: { limit: 5 } });
    assert.equal(log.status, 'success', log.content);
    assert.equal(
      (log.data as { commits: { subject: string }[] }).commits[0]?.subject,
      'first note',
    );
    assert.match(log.content, /subject: first note/);
  });

  it('gives bad parameters and injections error results, never a crash', async () => {
    const extra = await executor.execute({
      id: 'x',
      name: 'git_log',
      arguments: { ref: 'HEAD', upload_pack: 'touch /tmp/x' },
    });
    assert.equal(extra.error?.code, 'INVALID_PARAMS');
    const injected = await executor.execute({
      id: 'i',
      name: 'git_diff',
      arguments: { ref: `--output=${join(dir, 'pwned')}` },
    });
    assert.equal(injected.error?.code, 'INVALID_PARAMS');
    assert.equal(existsSync(join(dir, 'pwned')), false);
    const outside = await executor.execute({
      id: 'o',
      name: 'git_status',
      arguments: { repo: dir },
    });
    assert.equal(outside.error?.code, 'PERMISSION_DENIED');
  });

  it('runs a commit in a scratch repository (cautious) and holds a push for a human', async () => {
    const added = await executor.execute({
      id: 'a',
      name: 'git_add',
      arguments: { paths: ['note.md'] },
    });
    assert.equal(added.status, 'success', added.content);
    const committed = await executor.execute({
      id: 'c',
      name: 'git_commit',
      arguments: { message: 'from the pipeline' },
    });
    assert.equal(committed.status, 'success', committed.content);
    assert.equal(committed.metadata.safety_level, 'cautious');
    assert.equal(git(vault, 'log', '-1', '--format=%an|%s').trim(), 'Pipeline|from the pipeline');
    const push = await executor.execute({ id: 'p', name: 'git_push', arguments: {} });
    assert.equal(push.status, 'rejected');
    assert.match(push.error?.message ?? '', /needs a human/);
  });

  it('kills git at the timeout and answers TIMEOUT', async () => {
    const push = await executor.execute({
      id: 't',
      name: 'git_push',
      arguments: { remote: 'slow' },
    });
    assert.equal(push.error?.code, 'TIMEOUT', push.content);
  });
});
