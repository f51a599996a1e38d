import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const UNITS = [
  { file: 'vaultd.service', user: false, maxExposure: 2.5 },
  { file: 'vaultd-user.service', user: true, maxExposure: 5.5 },
] as const;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile('systemd-analyze', args, { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stdout, stderr: err !== null && err.code === 'ENOENT' ? 'ENOENT' : stderr });
    });
  });
}

let dir: string;
let env: NodeJS.ProcessEnv;
let available = true;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vaultd-unit-'));
  // `--user` needs a runtime directory even when nothing runs.
  const runtime = join(dir, 'runtime');
  await mkdir(runtime, { mode: 0o700 });
  env = {
    ...process.env,
    XDG_RUNTIME_DIR: runtime,
    SYSTEMD_LOG_COLOR: '0',
    SYSTEMD_COLORS: '0',
    SYSTEMD_PAGER: '',
  };
  available = (await run(['--version'], env)).stderr !== 'ENOENT';
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Copy a unit into the temp dir under its own name, with ExecStart's node pointed at the node
 * running this test: verify checks that the executable exists, and CI's node is not always
 * /usr/bin/node.
 */
async function stage(
  file: string,
  edit: (text: string) => string = (t) => t,
  dropIn?: string,
): Promise<string> {
  const text = await readFile(join(root, 'systemd', file), 'utf8');
  const sub = join(dir, `${file}-${Math.random().toString(36).slice(2)}`);
  await mkdir(sub);
  const path = join(sub, file);
  await writeFile(path, edit(text.replaceAll('/usr/bin/node', process.execPath)));
  if (dropIn !== undefined) {
    // Where `systemctl edit` and the drop-in's own comment put it: `<unit>.d/` beside the unit.
    await mkdir(join(sub, `${file}.d`));
    await writeFile(
      join(sub, `${file}.d`, 'sandbox.conf'),
      await readFile(join(root, 'systemd', dropIn), 'utf8'),
    );
  }
  return path;
}

/**
 * systemd-analyze's security checks of a unit as it reads it (drop-ins included): each check's
 * name (`RestrictNamespaces=~user`) and whether it passed; undefined when this systemd-analyze
 * has no `--offline` (systemd < 250).
 */
async function securityChecks(
  path: string,
  user: boolean,
): Promise<Map<string, boolean> | undefined> {
  const result = await run(
    ['security', ...(user ? ['--user'] : []), '--offline=yes', '--no-pager', path],
    env,
  );
  if (/unrecognized option|unknown option/i.test(result.stderr)) return undefined;
  const checks = new Map<string, boolean>();
  for (const line of result.stdout.split('\n')) {
    const m = /^([✓✗])\s+(\S+)/.exec(line);
    if (m) checks.set(m[2]!, m[1] === '✓');
  }
  assert.ok(checks.size > 20, `no checks in:\n${result.stdout}\n${result.stderr}`);
  return checks;
}

// What systemd/vaultd-sandbox.conf gives back, as systemd reads each unit with it: the namespaces,
// mount calls, netlink socket and unmasked /proc bubblewrap builds a sandbox from. The user unit
// has no ProtectProc= to give back, and its ProtectKernelLogs= was what kept CAP_SYSLOG out of a
// service that has no capabilities to begin with.
const SANDBOX_RELAXES = [
  'ProtectHostname=',
  'ProtectKernelLogs=',
  'ProtectKernelTunables=',
  'RestrictAddressFamilies=~AF_NETLINK',
  'RestrictNamespaces=~cgroup',
  'RestrictNamespaces=~ipc',
  'RestrictNamespaces=~mnt',
  'RestrictNamespaces=~net',
  'RestrictNamespaces=~pid',
  'RestrictNamespaces=~user',
  'RestrictNamespaces=~uts',
  'SystemCallFilter=~@mount',
];
const SANDBOX_RELAXES_BY_UNIT: Record<string, string[]> = {
  'vaultd.service': [...SANDBOX_RELAXES, 'ProtectProc='],
  'vaultd-user.service': [...SANDBOX_RELAXES, 'CapabilityBoundingSet=~CAP_SYSLOG'],
};

/** Lines of verify output that are about our unit (other units on the host may warn too). */
function complaints(result: Run, path: string, file: string): string[] {
  return `${result.stdout}\n${result.stderr}`
    .split('\n')
    .filter((l) => l.includes(path) || l.includes(file));
}

/** Keys set in the unit, uncommented, as `Key=value` lines. */
async function keys(file: string): Promise<Map<string, string>> {
  const text = await readFile(join(root, 'systemd', file), 'utf8');
  const map = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m) map.set(m[1]!, m[2]!);
  }
  return map;
}

describe('systemd units', () => {
  for (const unit of UNITS) {
    it(`${unit.file} passes systemd-analyze verify without a warning`, async (t) => {
      if (!available) return t.skip('systemd-analyze not installed (apt-get install systemd)');
      const path = await stage(unit.file);
      const result = await run(['verify', ...(unit.user ? ['--user'] : []), path], env);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(complaints(result, path, unit.file), []);
    });
  }

  it('the verify check catches a misspelt key and a missing executable', async (t) => {
    if (!available) return t.skip('systemd-analyze not installed (apt-get install systemd)');
    const typo = await stage('vaultd.service', (t) =>
      t.replace('WatchdogSec=30', 'WatchdogSecs=30'),
    );
    const result = await run(['verify', typo], env);
    assert.match(
      complaints(result, typo, 'vaultd.service').join('\n'),
      /Unknown key 'WatchdogSecs'/,
    );
    const missing = await stage('vaultd.service', (t) =>
      t.replace(process.execPath, '/nonexistent/node'),
    );
    const broken = await run(['verify', missing], env);
    assert.notEqual(broken.code, 0);
  });

  for (const unit of UNITS) {
    it(`${unit.file} keeps its systemd-analyze security exposure at or below ${unit.maxExposure}`, async (t) => {
      if (!available) return t.skip('systemd-analyze not installed (apt-get install systemd)');
      const path = await stage(unit.file);
      const result = await run(
        ['security', ...(unit.user ? ['--user'] : []), '--offline=yes', '--no-pager', path],
        env,
      );
      if (/unrecognized option|unknown option/i.test(result.stderr)) {
        return t.skip('this systemd-analyze has no --offline (needs systemd >= 250)');
      }
      const m = /Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(result.stdout);
      assert.ok(m, `no exposure figure in:\n${result.stdout}\n${result.stderr}`);
      const exposure = Number(m[1]);
      t.diagnostic(`${unit.file} exposure ${exposure}`);
      assert.ok(exposure <= unit.maxExposure, `exposure ${exposure} > ${unit.maxExposure}`);
    });
  }

  for (const unit of UNITS) {
    it(`${unit.file} with systemd/vaultd-sandbox.conf: verify passes, and only what bubblewrap needs is given back`, async (t) => {
      if (!available) return t.skip('systemd-analyze not installed (apt-get install systemd)');
      const path = await stage(unit.file, undefined, 'vaultd-sandbox.conf');
      const verified = await run(['verify', ...(unit.user ? ['--user'] : []), path], env);
      assert.equal(verified.code, 0, verified.stderr);
      assert.deepEqual(complaints(verified, path, unit.file), []);
      assert.deepEqual(complaints(verified, path, 'sandbox.conf'), []);
      const before = await securityChecks(await stage(unit.file), unit.user);
      const after = await securityChecks(path, unit.user);
      if (before === undefined || after === undefined)
        return t.skip('this systemd-analyze has no --offline (needs systemd >= 250)');
      const given = [...after].filter(([name, passed]) => before.get(name) !== passed);
      assert.deepEqual(
        given.map(([name, passed]) => `${passed ? 'now held' : 'given back'}: ${name}`).sort(),
        (SANDBOX_RELAXES_BY_UNIT[unit.file] ?? []).map((name) => `given back: ${name}`).sort(),
      );
      assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), 'the same checks');
    });
  }

  it('both units use notify readiness, the watchdog and the hardening Node tolerates', async () => {
    for (const unit of UNITS) {
      const k = await keys(unit.file);
      for (const [key, value] of [
        ['Type', 'notify'],
        ['NotifyAccess', 'all'],
        ['WatchdogSec', '30'],
        ['Restart', 'on-failure'],
        // Starts on a full disk fail until it has room: never given up on (crash campaign
        // finding: five failures left the unit failed for good); a config error is not retried.
        ['StartLimitIntervalSec', '0'],
        ['RestartPreventExitStatus', '2'],
        ['KillMode', 'mixed'],
        ['ExecReload', '/bin/kill -HUP $MAINPID'],
        ['NoNewPrivileges', 'yes'],
        ['ProtectSystem', 'strict'],
        ['PrivateTmp', 'yes'],
        ['RestrictAddressFamilies', 'AF_UNIX AF_INET AF_INET6'],
        ['SystemCallFilter', '@system-service'],
      ] as const) {
        assert.equal(k.get(key), value, `${unit.file}: ${key}`);
      }
      assert.equal(
        k.has('MemoryDenyWriteExecute'),
        false,
        `${unit.file}: V8's JIT needs W+X memory`,
      );
      assert.match(k.get('ExecStart') ?? '', / run --config \S+vaultd\.yaml$/);
      assert.match(k.get('EnvironmentFile') ?? '', /^-\S+vaultd\.env$/);
      assert.ok(k.has('ReadWritePaths'), `${unit.file}: ReadWritePaths`);
      assert.ok(
        k.has('MemoryMax') && k.has('TasksMax') && k.has('LimitNOFILE'),
        `${unit.file}: limits`,
      );
      // The stop timeout must outlast the default 10 s grace period plus writing the results.
      assert.ok(
        Number.parseInt(k.get('TimeoutStopSec') ?? '0', 10) >= 25,
        `${unit.file}: TimeoutStopSec`,
      );
    }
    const system = await keys('vaultd.service');
    assert.equal(system.get('User'), 'vaultd');
    assert.equal(system.get('ProtectHome'), 'yes');
    assert.equal(system.get('CapabilityBoundingSet'), '');
  });
});
