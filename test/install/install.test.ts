import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { callBlock, note, ROOT } from '../helpers/vault.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a shell without npm's run-script variables (they would steer the child npm). */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key)) env[key] = value;
  }
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false', ...extra };
}

function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, timeout: 300_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** What `files` in package.json ships, copied as a fresh checkout would have it. */
async function copyCheckout(to: string): Promise<void> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
  for (const entry of [...pkg.files, 'package.json', 'package-lock.json']) {
    if (!existsSync(join(ROOT, entry)) || entry === 'dist') continue;
    await mkdir(join(to, entry, '..'), { recursive: true });
    await cp(join(ROOT, entry), join(to, entry), { recursive: true });
  }
  // `npm ci` would make it; the test borrows the checkout's (npm pack's prepare bundles with it).
  await symlink(join(ROOT, 'node_modules'), join(to, 'node_modules'));
}

describe('installing vaultd as the README says, offline, into a temp prefix', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-install-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('npm pack carries the lock; unpacked, npm ci and npm install -g put a working vaultd on PATH', async () => {
    const checkout = join(dir, 'checkout');
    const out = join(dir, 'out');
    const server = join(dir, 'opt-vaultd');
    const prefix = join(dir, 'prefix');
    const elsewhere = join(dir, 'home');
    for (const d of [checkout, out, server, prefix, elsewhere]) await mkdir(d, { recursive: true });
    await copyCheckout(checkout);
    const env = cleanEnv();

    const pack = await run('npm', ['pack', '--pack-destination', out], checkout, env);
    assert.equal(pack.code, 0, pack.stderr);
    const [tarball] = await readdir(out);
    assert.equal(tarball, 'vaultd-0.1.0.tgz');
    const list = await run('tar', ['-tzf', join(out, tarball)], dir, env);
    const files = list.stdout.split('\n');
    for (const f of [
      'package/npm-shrinkwrap.json',
      'package/scripts/build.mjs',
      'package/bin/vaultd.js',
      'package/dist/vaultd.mjs',
      // The built-in schemas' validators, made by the build: start-up and first calls compile none.
      'package/dist/config-validators.cjs',
      'package/dist/tool-validators.cjs',
      // The meta-schemas' validators: a plugin's schemas are checked without compiling them.
      'package/dist/meta-validators.cjs',
      'package/config/vaultd.yaml',
      'package/systemd/vaultd.service',
    ]) {
      assert.ok(files.includes(f), `${f} is in the tarball`);
    }
    assert.equal(existsSync(join(checkout, 'npm-shrinkwrap.json')), false, 'postpack removed it');

    const untar = await run(
      'tar',
      ['-xzf', join(out, tarball), '-C', server, '--strip-components=1'],
      dir,
      env,
    );
    assert.equal(untar.code, 0, untar.stderr);
    // V8 holds a module's source as one byte per character only if none is past U+00FF; the build
    // escapes the ones esbuild leaves in comments.
    for (const name of await readdir(join(server, 'dist'))) {
      if (!name.endsWith('.mjs')) continue;
      const wide = /[^\0-\xff]/u.exec(readFileSync(join(server, 'dist', name), 'utf8'));
      assert.equal(wide, null, `dist/${name} has ${JSON.stringify(wide?.[0])}`);
    }
    const ci = await run('npm', ['ci', '--omit=dev', '--offline', '--no-audit'], server, env);
    assert.equal(ci.code, 0, ci.stderr);
    assert.equal(existsSync(join(server, 'node_modules', 'typescript')), false, 'no dev deps');
    const global = await run(
      'npm',
      ['install', '-g', server, '--prefix', prefix, '--offline', '--no-audit'],
      elsewhere,
      env,
    );
    assert.equal(global.code, 0, global.stderr);

    // From another folder, found through PATH only.
    const path = { PATH: `${join(prefix, 'bin')}${delimiter}${process.env['PATH'] ?? ''}` };
    const userEnv = cleanEnv(path);
    const which = await run('sh', ['-c', 'command -v vaultd'], elsewhere, userEnv);
    assert.equal(which.stdout.trim(), join(prefix, 'bin', 'vaultd'));
    const version = await run('vaultd', ['--version'], elsewhere, userEnv);
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout.trim(), '0.1.0');

    const init = await run('vaultd', ['init', 'vault'], elsewhere, userEnv);
    assert.equal(init.code, 0, init.stderr);
    const vault = join(elsewhere, 'vault');
    assert.match(
      init.stdout,
      new RegExp(`start it with: vaultd run --config ${vault}/vaultd.yaml`),
    );
    await writeFile(
      join(vault, 'Needs_Action', 'a.md'),
      note('A', callBlock('search_web', { query: 5 })),
    );
    const once = await run(
      'vaultd',
      ['once', '--config', join(vault, 'vaultd.yaml')],
      elsewhere,
      userEnv,
    );
    assert.equal(once.code, 0, once.stderr);
    assert.deepEqual(await readdir(join(vault, 'Failed')), ['a.md']);

    // A TypeScript plugin in a folder of its own imports from 'vaultd': the installed one.
    await mkdir(join(elsewhere, 'my-tools'));
    await writeFile(
      join(elsewhere, 'my-tools', 'hello.ts'),
      "import { defineTool } from 'vaultd';\nexport const hello = defineTool<{ who: string }>({ name: 'hello', description: 'Say hello.', parameters: { who: { type: 'string' } }, required: ['who'], safety: 'safe', handler: (args) => `hello ${args.who}` });\n",
    );
    const withPlugin = join(vault, 'with-plugin.yaml');
    await writeFile(withPlugin, 'vault: .\nplugins: [../my-tools/hello.ts]\n');
    const tools = await run('vaultd', ['tools', '--config', withPlugin], elsewhere, userEnv);
    assert.equal(tools.code, 0, tools.stderr);
    assert.match(tools.stdout, /^ {2}hello +safe +Say hello\./m);
  });

  it('the README never tells anyone to run npx vaultd', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const m of readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm))
      assert.doesNotMatch(m[1] ?? '', /npx vaultd/);
    assert.match(readme, /npm ci && npm install -g \./);
    assert.match(readme, /Never run `npx vaultd` outside the checkout/);
    assert.doesNotMatch(readFileSync(join(ROOT, 'docs/service.md'), 'utf8'), /npx vaultd/);
  });
});
