// Per-call overhead of the shell pack's sandbox: p50 and p95 of N runs of `true`, bare
// (`bash -c true`), through the whole sandbox chain spawned directly, and as shell_exec calls
// through the pack host and executor. Run: node --import tsx bench/shell-overhead.ts [N]
import { spawn } from 'node:child_process';
import { readShellSettings } from '../src/tools/shell/config.ts';
import { newTag, sandboxArgv, systemView } from '../src/tools/shell/sandbox.ts';
import { startShell, workDir } from '../test/tools/shell/helpers.ts';

const runs = Number(process.argv[2] ?? 50);

function run(argv: readonly string[], cwd: string): Promise<void> {
  const [file, ...args] = argv;
  return new Promise((resolve, reject) => {
    const child = spawn(file ?? '', args, { cwd, env: { PATH: '/usr/bin:/bin' }, stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
  });
}

async function measure(label: string, once: () => Promise<unknown>): Promise<void> {
  await once(); // warm up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q: number): string =>
    (times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0).toFixed(1);
  console.log(`${label.padEnd(44)} p50 ${at(0.5).padStart(6)} ms   p95 ${at(0.95).padStart(6)} ms`);
}

const shell = await startShell();
try {
  const cwd = await workDir(shell.vault, 'work');
  const settings = readShellSettings({});
  const view = await systemView();
  const plan = { cwd, env: {}, hide: [], blank: [], readOnly: [], command: 'true' };
  console.log(
    `${runs} runs each of \`true\`; vaultd ${process.getuid?.() === 0 ? 'as root (setpriv to run_as)' : 'unprivileged'}`,
  );
  await measure('bash -c true (no sandbox)', () => run(['/bin/bash', '-c', 'true'], cwd));
  await measure('sandbox chain, spawned directly', () =>
    run(sandboxArgv(settings, { ...plan, tag: newTag() }, view), cwd),
  );
  await measure('shell_exec through the executor', async () => {
    const result = await shell.call('shell_exec', { command: 'true', cwd: 'work' });
    if (!result.success) throw new Error(result.content);
  });
} finally {
  await shell.close();
}
