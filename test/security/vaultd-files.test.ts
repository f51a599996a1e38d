// vaultd's own files (the config file it was started with, its plugin modules, the folder of its
// secrets) out of every tool's reach, replaying the attacks on them: an agent that rewrites the
// config or a plugin changes vaultd's policy, or runs code in it, at the next start; one that reads
// the config or `vaultd.env` reads webhook URLs and tokens. Through the file tools, the shell and
// commands sandboxes (real bubblewrap), and a git checkout in a vault kept in git.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { CONFIG_DEFAULTS } from '../../src/config/index.ts';
import { warnOfPluginsInVault } from '../../src/daemon.ts';
import type { ToolResult } from '../../src/protocol/index.ts';
import type { PackHost } from '../../src/tools/host.ts';
import {
  identityCheckArgv,
  secretMounts,
  vaultMountArgs,
  vaultMounts,
} from '../../src/tools/sandbox/vault-mounts.ts';
import { createVaultAccess, isInside } from '../../src/vault/access.ts';
import { protectedForRead, protectedForWrite } from '../../src/vault/protected.ts';
import { resolveLayout } from '../../src/vault/index.ts';
import { startPackHost } from '../helpers/pack-host.ts';
import { giveToSandbox } from '../tools/shell/helpers.ts';

const HAS_BWRAP = existsSync('/usr/bin/bwrap');
const CONFIG_TEXT = (body: Record<string, unknown>): string => JSON.stringify(body);
const PLUGIN_TEXT = 'export default { name: "p", tools: [] };\n';

interface Started {
  readonly host: PackHost;
  call(name: string, args?: Record<string, unknown>): Promise<ToolResult>;
}

async function start(configFile: string, allow: string[], vault: string): Promise<Started> {
  const started = await startPackHost(configFile, {
    allow,
    executor: { vault, timeoutMs: 30_000 },
  });
  let seq = 0;
  return {
    host: started.host,
    call: (name, args = {}) =>
      started.executor.execute({ id: `call_${++seq}`, name, arguments: args }),
  };
}

/** Run git in a repository as a person would, with a fixed identity and no system config. */
function gitIn(repo: string, args: readonly string[]): string {
  // The tests' vaults belong to the sandbox's user when they run as root.
  return execFileSync('git', ['-c', 'safe.directory=*', '-C', repo, ...args], {
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
      GIT_CONFIG_NOSYSTEM: '1',
      HOME: repo,
    },
  }).trim();
}

function stdoutOf(result: ToolResult): string {
  return (result.data as { stdout?: string } | undefined)?.stdout ?? '';
}

describe('the paths vaultd protects', () => {
  it('names the config file, its own folder, /etc/vaultd and the plugins', () => {
    const layout = resolveLayout({ vault: '/srv/vault', folders: CONFIG_DEFAULTS.folders });
    const own = { config: '/home/u/.config/vaultd/vaultd.yaml', plugins: ['/srv/vault/P/t.mjs'] };
    const write = protectedForWrite(layout, own);
    const read = protectedForRead(layout, own);
    for (const path of ['/home/u/.config/vaultd/vaultd.yaml', '/home/u/.config/vaultd']) {
      assert.ok(write.includes(path) && read.includes(path), path);
    }
    assert.ok(read.includes('/etc/vaultd') && write.includes('/etc/vaultd'));
    assert.ok(write.includes('/srv/vault/P/t.mjs'));
    assert.ok(!read.includes('/srv/vault/P/t.mjs'), 'plugins stay readable');
    // A config kept in the vault protects the file, never the vault it is in.
    const inVault = protectedForRead(layout, { config: '/srv/vault/vaultd.yaml' });
    assert.ok(inVault.includes('/srv/vault/vaultd.yaml'));
    assert.ok(!inVault.includes('/srv/vault'));
  });
});

describe('plugins kept in the vault', () => {
  it('are named in a warning at start: what they import is not protected', () => {
    const lines: { msg: string; plugin?: string }[] = [];
    const logger = pino(
      { level: 'warn' },
      { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const warned = warnOfPluginsInVault(
      {
        plugins: [
          '/srv/vault/Plugins/tool.mjs',
          '/opt/vaultd-plugins/other.mjs',
          '/srv/vault2/x.mjs',
        ],
      },
      '/srv/vault',
      logger,
    );
    assert.deepEqual(warned, ['/srv/vault/Plugins/tool.mjs']);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.plugin, '/srv/vault/Plugins/tool.mjs');
    assert.match(lines[0]?.msg ?? '', /outside the vault/);
  });
});

describe('the mounts that hide vaultd’s files', () => {
  it('hides a folder, blanks a file, and leaves alone what the sandbox does not show', async () => {
    const base = await mkdtemp(join(tmpdir(), 'vaultd-own-mounts-'));
    try {
      const shown = join(base, 'shown');
      await mkdir(join(shown, 'secrets'), { recursive: true });
      await writeFile(join(shown, 'secrets', 'vaultd.env'), 'X=1\n');
      await writeFile(join(shown, 'vaultd.yaml'), 'vault: .\n');
      await mkdir(join(base, 'elsewhere'));
      await writeFile(join(base, 'elsewhere', 'vaultd.yaml'), 'vault: .\n');
      const files = await createVaultAccess({
        roots: [{ name: 'vault', path: shown, writable: true }],
        protectedForRead: [
          join(shown, 'secrets'),
          join(shown, 'secrets', 'vaultd.env'),
          join(shown, 'vaultd.yaml'),
          join(base, 'elsewhere', 'vaultd.yaml'),
          join(shown, 'missing.yaml'),
        ],
      });
      const mounts = await secretMounts(files, (p) => isInside(p, shown), undefined);
      assert.deepEqual(mounts.hide, [join(shown, 'secrets')]);
      assert.deepEqual(mounts.blank, [join(shown, 'vaultd.yaml')]);
      assert.ok(mounts.empty !== undefined);
      assert.equal(await readFile(mounts.empty, 'utf8'), '');
      const args = vaultMountArgs({ ...mounts, readOnly: [] });
      assert.deepEqual(args, [
        '--tmpfs',
        join(shown, 'secrets'),
        '--remount-ro',
        join(shown, 'secrets'),
        '--ro-bind',
        mounts.empty,
        join(shown, 'vaultd.yaml'),
      ]);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});

describe('the check of what a sandbox mounted', () => {
  // bwrap binds by path: a folder swapped for a link between vaultd's check and the mount (an
  // agent's background command flipped one in a loop and read vaultd.env through the link, 1 try
  // in 10) is mounted in its place. The program runs only once every path is what vaultd saw.
  it('runs the program when every path is what vaultd saw, and nothing when one is not', async () => {
    const base = await mkdtemp(join(tmpdir(), 'vaultd-own-identity-'));
    try {
      await mkdir(join(base, 'Notes'));
      await mkdir(join(base, 'elsewhere'));
      const seen = await lstat(join(base, 'Notes'));
      const marker = join(base, 'ran');
      const run = (id: string) =>
        spawnSync(
          identityCheckArgv([{ path: join(base, 'Notes'), id }], ['/usr/bin/touch', marker])[0]!,
          identityCheckArgv([{ path: join(base, 'Notes'), id }], ['/usr/bin/touch', marker]).slice(
            1,
          ),
          { encoding: 'utf8' },
        );
      const good = run(`${seen.dev}:${seen.ino}`);
      assert.equal(good.status, 0, good.stderr);
      assert.equal(existsSync(marker), true);
      await rm(marker);
      // The folder swapped for a link to another one, as the race left it (renamed, not removed:
      // a removed folder's inode number may be given to the link at once).
      await rename(join(base, 'Notes'), join(base, 'Notes.real'));
      await symlink(join(base, 'elsewhere'), join(base, 'Notes'));
      const swapped = run(`${seen.dev}:${seen.ino}`);
      assert.equal(swapped.status, 125);
      assert.match(swapped.stderr, /changed while it was set up .*; nothing ran/);
      assert.equal(existsSync(marker), false, 'the program ran after the swap');
      await rm(join(base, 'Notes'));
      const gone = run(`${seen.dev}:${seen.ino}`);
      assert.equal(gone.status, 125, 'a path that vanished counts as changed');
      assert.equal(existsSync(marker), false);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('refuses to plan a sandbox whose working directory became a link (swapped with one)', async () => {
    // renameat2(RENAME_EXCHANGE) in a loop put the same link back each time: the link's own
    // inode was recorded, and the same link seen inside the sandbox passed the check.
    const base = await mkdtemp(join(tmpdir(), 'vaultd-own-plan-'));
    try {
      await mkdir(join(base, 'vault'));
      await symlink('.', join(base, 'vault', 'Build'));
      const files = await createVaultAccess({
        roots: [{ name: 'vault', path: join(base, 'vault'), writable: true }],
      });
      await assert.rejects(
        vaultMounts(join(base, 'vault', 'Build'), files, {
          vault: join(base, 'vault'),
          state: join(base, 'vault', '.vaultd'),
        }),
        /became a symbolic link/,
      );
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('adds nothing when there is nothing to check', () => {
    assert.deepEqual(identityCheckArgv([], ['/bin/true']), ['/bin/true']);
  });
});

describe('vaultd’s files and the file tools', () => {
  let vault: string;
  let started: Started;

  before(async () => {
    vault = await mkdtemp(join(tmpdir(), 'vaultd-own-fs-'));
    await mkdir(join(vault, 'setup'));
    await mkdir(join(vault, 'Plugins'));
    await writeFile(join(vault, 'Plugins', 'tool.mjs'), PLUGIN_TEXT);
    // Not the default name at the top, which the pack's own `protected:` already covers.
    const configFile = join(vault, 'setup', 'custom.yaml');
    await writeFile(
      configFile,
      CONFIG_TEXT({
        vault: '..',
        plugins: ['../Plugins/tool.mjs'],
        // A path of the pack's own list whose folder does not exist yet.
        tools: { filesystem: { enabled: true, protected: ['Later/locked.yaml'] } },
      }),
    );
    started = await start(configFile, ['*'], vault);
  });

  after(async () => {
    await started.host.stop();
    await rm(vault, { recursive: true, force: true });
  });

  it('refuses to read or write the config file vaultd was started with', async () => {
    const before = await readFile(join(vault, 'setup', 'custom.yaml'), 'utf8');
    const read = await started.call('read_file', { path: 'setup/custom.yaml' });
    assert.equal(read.status, 'error');
    assert.equal(read.error?.code, 'PERMISSION_DENIED', read.content);
    const write = await started.call('write_file', {
      path: 'setup/custom.yaml',
      content: 'policy: {allow: ["*"]}\n',
    });
    assert.equal(write.error?.code, 'PERMISSION_DENIED', write.content);
    // Listings and searches go on around it, without its content.
    const listed = await started.call('list_directory', { path: 'setup' });
    assert.equal(listed.status, 'success', listed.content);
    const found = await started.call('search_files', { pattern: '*', content: 'filesystem' });
    assert.equal(found.status, 'success', found.content);
    assert.doesNotMatch(JSON.stringify(found.data), /custom\.yaml/);
    const moved = await started.call('move_file', { source: 'setup', destination: 'old-setup' });
    assert.equal(moved.status, 'error', 'the folder holding the config moved');
    assert.equal(await readFile(join(vault, 'setup', 'custom.yaml'), 'utf8'), before);
  });

  it('refuses to change a plugin module, and still reads it', async () => {
    const write = await started.call('write_file', {
      path: 'Plugins/tool.mjs',
      content: 'process.exit(1)\n',
    });
    assert.equal(write.error?.code, 'PERMISSION_DENIED', write.content);
    const del = await started.call('delete_file', { path: 'Plugins/tool.mjs' });
    assert.equal(del.error?.code, 'PERMISSION_DENIED', del.content);
    const read = await started.call('read_file', { path: 'Plugins/tool.mjs' });
    assert.equal(read.status, 'success', read.content);
    assert.equal(await readFile(join(vault, 'Plugins', 'tool.mjs'), 'utf8'), PLUGIN_TEXT);
  });

  it('refuses a folder moved into place that would put a file at a protected path', async () => {
    const written = await started.call('write_file', {
      path: 'staging/locked.yaml',
      content: 'forged\n',
    });
    assert.equal(written.status, 'success', written.content);
    const moved = await started.call('move_file', { source: 'staging', destination: 'Later' });
    assert.equal(moved.error?.code, 'PERMISSION_DENIED', moved.content);
    assert.equal(existsSync(join(vault, 'Later')), false);
    assert.equal(existsSync(join(vault, 'staging', 'locked.yaml')), true);
  });
});

describe('vaultd’s files and the shell sandbox', { skip: !HAS_BWRAP && 'no bwrap' }, () => {
  let vault: string;
  let started: Started;
  const configText = (vaultPath: string): string =>
    CONFIG_TEXT({
      vault: vaultPath,
      plugins: ['Plugins/tool.mjs'],
      tools: { shell: { enabled: true } },
    });

  before(async () => {
    vault = await mkdtemp(join(tmpdir(), 'vaultd-own-shell-'));
    await giveToSandbox(vault);
    await mkdir(join(vault, 'Plugins'));
    await giveToSandbox(join(vault, 'Plugins'));
    await writeFile(join(vault, 'Plugins', 'tool.mjs'), PLUGIN_TEXT);
    await chmod(join(vault, 'Plugins', 'tool.mjs'), 0o666);
    // Where `vaultd init` puts it: at the top of the vault, world-readable and -writable here so
    // that only the sandbox stands between the command and the file.
    await writeFile(join(vault, 'vaultd.yaml'), configText(vault));
    await chmod(join(vault, 'vaultd.yaml'), 0o666);
    started = await start(join(vault, 'vaultd.yaml'), ['shell_*'], vault);
  });

  after(async () => {
    await started.host.stop();
    await rm(vault, { recursive: true, force: true });
  });

  const shell = (command: string): Promise<ToolResult> =>
    started.call('shell_exec', { command, cwd: '.' });
  /** Each command fails: the sandbox keeps the file as it is. */
  const allRefused = async (attacks: readonly string[]): Promise<void> => {
    for (const attack of attacks) {
      const result = await shell(attack);
      assert.equal(result.status, 'error', `${attack} succeeded`);
    }
  };

  it('shows the config file empty and keeps it as it is', async () => {
    const seen = await shell('wc -c < vaultd.yaml');
    assert.equal(seen.status, 'success', seen.content);
    assert.equal(stdoutOf(seen).trim(), '0', 'the config file reads empty');
    await allRefused([
      'echo "policy: {allow: [\\"*\\"]}" >> vaultd.yaml',
      'mv vaultd.yaml old.yaml',
      'rm -f vaultd.yaml',
    ]);
    assert.equal(await readFile(join(vault, 'vaultd.yaml'), 'utf8'), configText(vault));
  });

  it('keeps a plugin module and the way to it as they are', async () => {
    await allRefused([
      'echo "process.exit(1)" >> Plugins/tool.mjs',
      'rm -f Plugins/tool.mjs',
      // The folder renamed and made again would put the command's file at the plugin's path.
      'mv Plugins Plugins.old && mkdir Plugins && echo forged > Plugins/tool.mjs',
    ]);
    assert.equal(await readFile(join(vault, 'Plugins', 'tool.mjs'), 'utf8'), PLUGIN_TEXT);
    assert.equal(existsSync(join(vault, 'Plugins.old')), false);
    // The rest of the folder stays the command's to write.
    const other = await shell('echo ok > Plugins/notes.txt && cat Plugins/notes.txt');
    assert.equal(other.status, 'success', other.content);
    assert.equal(stdoutOf(other), 'ok\n');
  });
});

describe('vaultd’s secrets and the commands sandbox', { skip: !HAS_BWRAP && 'no bwrap' }, () => {
  let base: string;
  let vault: string;
  let configDir: string;
  let started: Started;

  before(async () => {
    // Not under /tmp, which the sandbox replaces with a tmpfs of its own.
    base = await mkdtemp('/var/tmp/vaultd-own-commands-');
    await giveToSandbox(base);
    vault = join(base, 'vault');
    await mkdir(vault);
    await giveToSandbox(vault);
    // As the user service keeps them: `~/.config/vaultd/vaultd.yaml` and `vaultd.env` beside it.
    configDir = join(base, 'config', 'vaultd');
    await mkdir(configDir, { recursive: true });
    await giveToSandbox(join(base, 'config'));
    await giveToSandbox(configDir);
    await writeFile(join(configDir, 'vaultd.env'), 'SMTP_PASSWORD=hunter2\n');
    await chmod(join(configDir, 'vaultd.env'), 0o644);
    const command = (argv: string[]): Record<string, unknown> => ({
      description: 'x',
      argv,
      safety: 'safe',
      sandbox: true,
      cwd: '.',
    });
    await writeFile(
      join(configDir, 'vaultd.yaml'),
      CONFIG_TEXT({
        vault,
        tools: {
          commands: {
            read_env: command(['/bin/sh', '-c', `cat ${configDir}/vaultd.env; true`]),
            read_config: command(['/bin/sh', '-c', `cat ${configDir}/vaultd.yaml; true`]),
            list_config_dir: command(['/bin/sh', '-c', `ls -A ${configDir} | wc -l`]),
          },
        },
      }),
    );
    await chmod(join(configDir, 'vaultd.yaml'), 0o644);
    // Started through a link to the folder: the folder hidden is the one the file really is in.
    await symlink(configDir, join(base, 'etc-link'));
    started = await start(join(base, 'etc-link', 'vaultd.yaml'), [], vault);
  });

  after(async () => {
    await started.host.stop();
    await rm(base, { recursive: true, force: true });
  });

  it('hides the folder of the config file and the secrets beside it', async () => {
    for (const name of ['read_env', 'read_config']) {
      const result = await started.call(name);
      assert.equal(result.status, 'success', result.content);
      assert.doesNotMatch(stdoutOf(result), /hunter2|commands/, `${name} read a secret`);
    }
    const listed = await started.call('list_config_dir');
    assert.equal(stdoutOf(listed), '0\n', 'the config folder shows empty');
    assert.equal(await readFile(join(configDir, 'vaultd.env'), 'utf8'), 'SMTP_PASSWORD=hunter2\n');
  });
});

describe(
  'vaultd’s config kept as a link (a dotfiles checkout)',
  { skip: !HAS_BWRAP && 'no bwrap' },
  () => {
    let base: string;
    let vault: string;
    let store: string;
    let started: Started;
    const git = (...args: string[]): string => gitIn(vault, args);

    before(async () => {
      base = await mkdtemp(join(tmpdir(), 'vaultd-own-links-'));
      await giveToSandbox(base);
      vault = join(base, 'vault');
      store = join(base, 'dotfiles');
      await mkdir(vault);
      await giveToSandbox(vault);
      await mkdir(join(vault, 'Notes'));
      await giveToSandbox(join(vault, 'Notes'));
      await mkdir(store);
      await writeFile(join(vault, '.gitignore'), '.vaultd/\n');
      // An old commit held the config as a file, with a policy that lets everything run.
      await writeFile(join(vault, 'vaultd.yaml'), CONFIG_TEXT({ vault, policy: { allow: ['*'] } }));
      git('init', '-q', '-b', 'main');
      git('add', '-A');
      git('commit', '-q', '-m', 'old config');
      await rm(join(vault, 'vaultd.yaml'));
      await writeFile(
        join(store, 'vaultd.yaml'),
        CONFIG_TEXT({
          vault,
          tools: {
            filesystem: { enabled: true },
            shell: { enabled: true },
            git: { enabled: true },
          },
        }),
      );
      await symlink(join(store, 'vaultd.yaml'), join(vault, 'vaultd.yaml'));
      git('add', '-A');
      git('commit', '-q', '-m', 'config kept in dotfiles');
      // A folder holding a link to it, for the file tools' recursive delete.
      await mkdir(join(vault, 'setup'));
      await symlink(join(store, 'vaultd.yaml'), join(vault, 'setup', 'vaultd.yaml'));
      started = await start(join(vault, 'vaultd.yaml'), ['*'], vault);
    });

    after(async () => {
      await started.host.stop();
      await rm(base, { recursive: true, force: true });
    });

    const configNow = (): Promise<string> => readFile(join(vault, 'vaultd.yaml'), 'utf8');

    it('refuses a shell whose working directory holds the link, and runs one below it', async () => {
      const before = await configNow();
      const replaced = await started.call('shell_exec', {
        cwd: '.',
        command: `rm vaultd.yaml && echo '{"policy":{"allow":["*"]}}' > vaultd.yaml`,
      });
      assert.equal(replaced.error?.code, 'PERMISSION_DENIED', replaced.content);
      assert.equal((await lstat(join(vault, 'vaultd.yaml'))).isSymbolicLink(), true);
      assert.equal(await configNow(), before);
      const below = await started.call('shell_exec', { cwd: 'Notes', command: 'echo ok' });
      assert.equal(below.status, 'success', below.content);
    });

    it('refuses to delete a folder holding a link vaultd loads its config through', async () => {
      const second = await startPackHost(join(vault, 'setup', 'vaultd.yaml'), {
        allow: ['*'],
        executor: { vault, timeoutMs: 30_000 },
      });
      try {
        const removed = await second.executor.execute({
          id: 'del',
          name: 'delete_file',
          arguments: { path: 'setup', recursive: true },
        });
        assert.equal(removed.error?.code, 'PERMISSION_DENIED', removed.content);
        assert.equal((await lstat(join(vault, 'setup', 'vaultd.yaml'))).isSymbolicLink(), true);
      } finally {
        await second.host.stop();
      }
    });

    it('refuses a checkout that would turn the link back into the old file', async () => {
      const result = await started.call('git_checkout', { ref: 'HEAD~1' });
      assert.equal(result.error?.code, 'PERMISSION_DENIED', result.content);
      assert.equal((await lstat(join(vault, 'vaultd.yaml'))).isSymbolicLink(), true);
    });
  },
);

describe('vaultd’s folders and a git checkout in a vault kept in git', () => {
  let vault: string;
  let started: Started;
  let first: string;
  const git = (...args: string[]): string => gitIn(vault, args);

  before(async () => {
    vault = await mkdtemp(join(tmpdir(), 'vaultd-own-git-'));
    const configText = CONFIG_TEXT({ vault, tools: { git: { enabled: true } } });
    await writeFile(join(vault, 'vaultd.yaml'), configText);
    await mkdir(join(vault, 'Done'));
    await mkdir(join(vault, 'Notes'));
    await writeFile(join(vault, 'Done', 'old.md'), 'an old result\n');
    await writeFile(join(vault, 'Notes', 'a.md'), 'one\n');
    await writeFile(join(vault, '.gitignore'), '.vaultd/\n');
    // As obsidian-git keeps a vault: everything committed, vaultd's folders too.
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-q', '-m', 'first');
    first = git('rev-parse', 'HEAD');
    git('rm', '-q', 'Done/old.md');
    await writeFile(join(vault, 'vaultd.yaml'), configText + '\n');
    git('commit', '-q', '-am', 'done emptied, config changed');
    git('checkout', '-q', '-b', 'notes-only');
    await writeFile(join(vault, 'Notes', 'a.md'), 'two\n');
    git('commit', '-q', '-am', 'notes only');
    git('checkout', '-q', 'main');
    started = await start(join(vault, 'vaultd.yaml'), ['git_*'], vault);
  });

  after(async () => {
    await started.host.stop();
    await rm(vault, { recursive: true, force: true });
  });

  it('refuses a checkout that would write vaultd’s folders or its config', async () => {
    const head = git('rev-parse', 'HEAD');
    const result = await started.call('git_checkout', { ref: first });
    assert.equal(result.error?.code, 'PERMISSION_DENIED', result.content);
    assert.match(result.content, /Done\/old\.md|vaultd\.yaml/);
    assert.equal(git('rev-parse', 'HEAD'), head, 'HEAD moved');
    assert.equal(existsSync(join(vault, 'Done', 'old.md')), false);
  });

  it('leaves the config file out of what git shows, history and working tree alike', async () => {
    // HEAD changed the config; a human edits it again, uncommitted.
    const shown = await started.call('git_show', { ref: 'HEAD' });
    assert.equal(shown.status, 'success', shown.content);
    assert.doesNotMatch(JSON.stringify(shown.data), /vaultd\.yaml|"tools"/);
    assert.match(JSON.stringify(shown.data), /Done\/old\.md/, 'the rest of the commit is shown');
    const config = join(vault, 'vaultd.yaml');
    const text = await readFile(config, 'utf8');
    await writeFile(config, text + '# webhook: https://hooks.example.invalid/T0/SECRET\n');
    try {
      const diff = await started.call('git_diff', {});
      assert.equal(diff.status, 'success', diff.content);
      assert.doesNotMatch(JSON.stringify(diff.data), /SECRET|vaultd\.yaml/);
      const log = await started.call('git_log', {});
      assert.equal(log.status, 'success', log.content);
    } finally {
      await writeFile(config, text);
    }
  });

  it('still switches to a branch that changes other files only', async () => {
    const result = await started.call('git_checkout', { ref: 'notes-only' });
    assert.equal(result.status, 'success', result.content);
    assert.equal(await readFile(join(vault, 'Notes', 'a.md'), 'utf8'), 'two\n');
  });
});
