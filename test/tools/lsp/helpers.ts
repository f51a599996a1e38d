import { chmod, cp, mkdir, readdir, readFile, readlink, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Executor } from '../../../src/execute/index.ts';
import type { ToolResult } from '../../../src/protocol/types.ts';
import type { PackHost } from '../../../src/tools/host.ts';
import { startPackHost } from '../../helpers/pack-host.ts';
import { ROOT } from '../../helpers/vault.ts';

/** The fixture folder. */
export const FIXTURES = join(ROOT, 'test/fixtures/lsp');

/**
 * Copy the fixture project into a folder, dropping the `.txt` that keeps vaultd's own type check
 * away from its deliberate errors.
 * @param dest where the project goes.
 */
export async function copyProject(dest: string): Promise<void> {
  await cp(join(FIXTURES, 'project'), dest, { recursive: true });
  for (const name of await readdir(join(dest, 'src'))) {
    if (name.endsWith('.txt')) {
      await rename(join(dest, 'src', name), join(dest, 'src', name.slice(0, -4)));
    }
  }
}

/** A pack host running the lsp pack with a config, and an executor calling its tools. */
export interface LspHost {
  readonly host: PackHost;
  readonly executor: Executor;
  call(name: string, args: Record<string, unknown>, id?: string): Promise<ToolResult>;
}

let seq = 0;

/**
 * Start the built-in packs with `tools.lsp` as given (loaded and validated like a config file),
 * and an executor that runs safe calls with no cache and no retries.
 * @param base a temp folder holding `vault/`; the config file is written beside it.
 * @param lsp the `tools.lsp` section.
 * @param timeoutMs the executor's call timeout.
 */
export async function startLspHost(
  base: string,
  lsp: Record<string, unknown>,
  timeoutMs = 90_000,
): Promise<LspHost> {
  // As root, sandboxed servers run as run_as (65534), which must be able to enter the vault.
  await chmod(base, 0o755);
  const file = join(base, `vaultd-${seq++}.yaml`);
  await writeFile(file, JSON.stringify({ tools: { lsp: { enabled: true, ...lsp } } }));
  const { host, executor } = await startPackHost(file, {
    vault: join(base, 'vault'),
    executor: { timeoutMs, cacheTtlMs: 0 },
  });
  let n = 0;
  return {
    host,
    executor,
    call: (name, args, id = `c${n++}`) => executor.execute({ id, name, arguments: args }),
  };
}

/** A process, as `/proc` shows it. */
export interface ProcessInfo {
  readonly pid: number;
  readonly cwd: string;
  readonly cmdline: string;
}

/**
 * The processes whose working directory is inside a folder (language servers run in their
 * workspace root).
 * @param dir absolute real path.
 */
export async function processesIn(dir: string): Promise<ProcessInfo[]> {
  const out: ProcessInfo[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cwd = await readlink(`/proc/${name}/cwd`);
      if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue;
      const cmdline = (await readFile(`/proc/${name}/cmdline`, 'utf8')).split('\0').join(' ');
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      // A zombie has already exited; only its parent's wait is missing.
      if (/\) Z /.test(stat)) continue;
      out.push({ pid: Number(name), cwd, cmdline });
    } catch {
      // Gone meanwhile, or not ours to look at.
    }
  }
  return out;
}

/**
 * The 1-based column, in characters, where `needle` starts on a line.
 * @param line the line.
 * @param needle what to find.
 */
export function columnOf(line: string, needle: string): number {
  const index = line.indexOf(needle);
  if (index === -1) throw new Error(`${needle} is not on the line ${line}`);
  return [...line.slice(0, index)].length + 1;
}

/**
 * Make a folder and write files into it.
 * @param dir the folder.
 * @param files name → content.
 */
export async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
}
