import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CONFIG_DEFAULTS } from '../../src/config/defaults.ts';
import { BIN, ROOT } from '../helpers/vault.ts';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const SERVICE_DOC = read('docs/service.md');
const README = read('README.md');
const ENV_EXAMPLE = read('systemd/vaultd.env.example');
const SAMPLE = read('config/vaultd.yaml');

/** The shell blocks of a markdown text, as lines. */
function shellLines(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) out.push(...(m[1] ?? '').split('\n'));
  return out.filter((l) => l.trim() !== '');
}

/** Every variable name the sources read from the environment. */
function namesReadBySources(): Set<string> {
  const names = new Set<string>([CONFIG_DEFAULTS.http.api_token_env]);
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/env\)?\[['"]([A-Z][A-Z0-9_]*)['"]\]/g))
          names.add(m[1]!);
      }
    }
  };
  walk(join(ROOT, 'src'));
  return names;
}

// Names systemd sets or the docs explain, which no operator puts into the env file.
const SYSTEMD_NAMES = new Set(['NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID', 'MAINPID']);

describe('docs/service.md tells the truth', () => {
  const envFile = new Set([...ENV_EXAMPLE.matchAll(/^#?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
  const sampleNames = new Set([
    ...[...SAMPLE.matchAll(/\$\{([A-Z][A-Z0-9_]*)(?::-[^}]*)?\}/g)]
      .map((m) => m[1]!)
      .filter((n) => n !== 'NAME'),
    ...[...SAMPLE.matchAll(/_env:\s*([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!),
  ]);

  it('the env example names exactly what the sample config and the sources read', () => {
    assert.ok(envFile.size >= 5, [...envFile].join(' '));
    for (const name of sampleNames)
      assert.ok(envFile.has(name), `${name} missing from the env example`);
    const read = namesReadBySources();
    for (const name of envFile) {
      assert.ok(
        sampleNames.has(name) || read.has(name),
        `${name} in the env example is read by neither the sample config nor vaultd`,
      );
    }
  });

  it('every variable the service doc and the README name is in the env example', () => {
    const named = new Set<string>();
    for (const text of [SERVICE_DOC, README]) {
      for (const m of text.matchAll(/\$\{([A-Z][A-Z0-9_]*)\}/g)) named.add(m[1]!);
      for (const m of text.matchAll(/\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)=/g)) named.add(m[1]!);
    }
    // The paragraph of docs/service.md that lists the names.
    const list = /The environment names in `vaultd\.env\.example`[^]*?plus `VAULTD_LOG_LEVEL`/.exec(
      SERVICE_DOC,
    );
    assert.ok(list, 'docs/service.md lists the environment names');
    const listed = [...list[0].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!);
    assert.deepEqual(
      new Set([...listed, 'VAULTD_LOG_LEVEL']),
      envFile,
      'the list in docs/service.md is the env example',
    );
    for (const name of named) {
      if (name === 'NAME') continue; // the placeholder of `${NAME}` itself
      if (SYSTEMD_NAMES.has(name) || name === 'UV_THREADPOOL_SIZE' || name === 'NODE_ENV') continue;
      if (name === 'VAULTD_CONFIG' || name === 'VAULTD_FROM_SOURCE') continue; // not secrets
      assert.ok(envFile.has(name), `${name} is documented but not in systemd/vaultd.env.example`);
    }
  });

  it('one HTTP port everywhere: the sample config’s, the docs’ curl lines and http.port', () => {
    const port = /^\s*#\s*port:\s*(\d+)/m.exec(SAMPLE)?.[1];
    assert.ok(port, 'the sample config names the port the docs use');
    const mentioned = [
      ...SERVICE_DOC.matchAll(/(?:localhost|127\.0\.0\.1):(\d+)/g),
      ...SERVICE_DOC.matchAll(/http\.port:?\s*`?(\d+)/g),
      ...README.matchAll(/http\.port`? \(the docs use (\d+)\)/g),
      ...read('docs/security.md').matchAll(/^\s*port:\s*(\d+)/gm),
    ].map((m) => m[1]);
    assert.ok(mentioned.length >= 4, mentioned.join(' '));
    for (const p of mentioned) assert.equal(p, port);
  });

  it('the install steps give /etc/vaultd and its files to root, readable by group vaultd', () => {
    for (const text of [SERVICE_DOC, README]) {
      const lines = shellLines(text);
      const etc = lines.filter((l) => /\binstall\b.*\/etc\/vaultd/.test(l));
      assert.ok(
        etc.some((l) =>
          /install -d -m 0750 -o root -g vaultd \/etc\/vaultd$/.test(l.split('#')[0]!.trim()),
        ),
        etc.join('\n'),
      );
      const files = etc.filter((l) => /\/etc\/vaultd\/vaultd\.(yaml|env)/.test(l));
      assert.equal(files.length, 2, files.join('\n'));
      // The config is the service user's to read; the secrets are root's, read by systemd.
      for (const l of files) {
        if (l.includes('vaultd.yaml')) assert.match(l, /install -m 0640 -o root -g vaultd /);
        else assert.match(l, /install -m 0600 -o root -g root /);
      }
      assert.ok(
        lines.some((l) =>
          l.includes('sudo -u vaultd vaultd init --config /etc/vaultd/vaultd.yaml'),
        ),
      );
    }
  });
});

describe('walking the install steps of docs/service.md as an unprivileged service user', () => {
  let root: string;
  const asRoot = process.getuid?.() === 0;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'vaultd-service-'));
    await chmod(root, 0o755);
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  /** A documented line with the paths moved under the temp root and user vaultd played by nobody. */
  const adapt = (line: string): string =>
    line
      .split('#')[0]!
      .replace(/^sudo /, '')
      .replaceAll('/etc/vaultd', join(root, 'etc/vaultd'))
      .replaceAll('/var/lib/vaultd', join(root, 'var/lib/vaultd'))
      .replace(/-o vaultd/g, '-o nobody')
      .replace(/-g vaultd/g, '-g nogroup')
      .trim();

  it('config and env install as documented, the service user makes the vault with init --config', async (t) => {
    if (!asRoot || spawnSync('id', ['nobody']).status !== 0) {
      t.skip('needs root and a nobody user to play the service user');
      return;
    }
    const lines = shellLines(SERVICE_DOC);
    const installs = lines.filter(
      (l) => /^sudo install /.test(l) && /\/etc\/vaultd|\/var\/lib\/vaultd/.test(l),
    );
    assert.equal(installs.length, 4, installs.join('\n'));
    for (const line of installs) {
      const argv = adapt(line).split(/\s+/);
      execFileSync(argv[0]!, argv.slice(1), { cwd: ROOT });
    }
    const config = join(root, 'etc/vaultd/vaultd.yaml');
    assert.equal(statSync(join(root, 'etc/vaultd')).mode & 0o777, 0o750);
    assert.equal(statSync(config).mode & 0o777, 0o640);
    assert.equal(statSync(join(root, 'etc/vaultd/vaultd.env')).mode & 0o777, 0o600);
    // The sudoedit step: point the config at the vault.
    const vault = join(root, 'var/lib/vaultd/vault');
    await writeFile(
      config,
      (await readFile(config, 'utf8')).replace(/^vault: .*$/m, `vault: ${vault}`),
    );

    const initLine = lines.find((l) => l.startsWith('sudo -u vaultd vaultd init'));
    assert.ok(initLine);
    const args = adapt(initLine)
      .replace(/^-u vaultd vaultd /, '')
      .split(/\s+/);
    const asService = (argv: string[]) =>
      spawnSync(process.execPath, [BIN, ...argv], {
        uid: 65534,
        gid: 65534,
        cwd: '/',
        encoding: 'utf8',
        env: { ...process.env, HOME: root },
        timeout: 60_000,
      });
    const init = asService(args);
    assert.equal(init.status, 0, init.stdout + init.stderr);
    assert.match(init.stdout, new RegExp(`vault ready at ${vault}`));
    assert.ok(existsSync(join(vault, 'Needs_Action')));
    assert.equal(existsSync(join(vault, 'vaultd.yaml')), false);
    assert.equal(statSync(vault).uid, 65534, 'the vault belongs to the service user');
    const status = asService(['status', '--config', config]);
    assert.equal(status.status, 0, status.stderr);
    assert.match(status.stdout, /^daemon: not running$/m);

    // What the issue found: a config installed root:root 0640 locks the service user out.
    await chown(config, 0, 0);
    const locked = asService(['status', '--config', config]);
    assert.equal(locked.status, 2);
    assert.match(locked.stderr, /cannot read config file/);
  });
});
