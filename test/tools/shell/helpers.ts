// A vault with the shell pack started by the real pack host, and an executor whose policy lets
// the shell tools run (the sandbox, not approval, is what these tests look at).
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Executor } from '../../../src/execute/index.ts';
import type { ToolRegistry } from '../../../src/protocol/index.ts';
import { type ToolResult } from '../../../src/protocol/index.ts';
import type { PackHost } from '../../../src/tools/host.ts';
import { startPackHost } from '../../helpers/pack-host.ts';

/** The uid commands run as in these tests: `run_as` when the tests run as root, else ours. */
export const SANDBOX_UID = process.getuid?.() === 0 ? 65_534 : (process.getuid?.() ?? 0);

/**
 * Make a folder usable by the sandbox's user: when the tests run as root, commands run as
 * `run_as` (65534), which must be able to enter and write the folder.
 * @param path the folder.
 */
export async function giveToSandbox(path: string): Promise<void> {
  await chmod(path, 0o755);
  if (process.getuid?.() === 0) await chown(path, SANDBOX_UID, SANDBOX_UID);
}

/** A started shell pack on a temp vault. */
export interface ShellHost {
  readonly vault: string;
  readonly host: PackHost;
  readonly registry: ToolRegistry;
  readonly executor: Executor;
  /** Run a call; each gets a fresh id. */
  call(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Stop the pack (its jobs) and, unless `keep`, delete the vault. */
  close(options?: { keep?: boolean }): Promise<void>;
}

let seq = 0;

/**
 * Start the shell pack with this `tools.shell` section (enabled) on a vault.
 * @param section the pack's config, as YAML would give it.
 * @param vault an existing vault to reuse (a restart); default a fresh temp vault.
 */
export async function startShell(
  section: Record<string, unknown> = {},
  vault?: string,
): Promise<ShellHost> {
  const root = vault ?? (await mkdtemp(join(tmpdir(), 'vaultd-shell-')));
  await giveToSandbox(root);
  const configFile = join(root, 'vaultd.yaml');
  await writeFile(
    configFile,
    JSON.stringify({ vault: root, tools: { shell: { enabled: true, ...section } } }),
  );
  let started: Awaited<ReturnType<typeof startPackHost>>;
  try {
    started = await startPackHost(configFile, {
      allow: ['shell_*'],
      executor: { vault: root, timeoutMs: 60_000 },
    });
  } catch (error) {
    // A config the pack refuses leaves no temp vault behind.
    if (vault === undefined) await rm(root, { recursive: true, force: true });
    throw error;
  }
  const { host, registry, executor } = started;
  return {
    vault: root,
    host,
    registry,
    executor,
    call: (name, args) => executor.execute({ id: `call_${++seq}`, name, arguments: args }),
    close: async (options = {}) => {
      await host.stop();
      if (options.keep !== true) await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Make a folder inside the vault that the sandbox's user may write.
 * @param vault the vault.
 * @param name the folder's name.
 */
export async function workDir(vault: string, name: string): Promise<string> {
  const path = join(vault, name);
  await mkdir(path, { recursive: true });
  await giveToSandbox(path);
  return path;
}

/**
 * Pids of processes whose command line holds `marker`.
 * @param marker a unique string, e.g. a sleep's odd duration.
 */
export async function processesWith(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'latin1')).replaceAll('\0', ' ');
      if (cmdline.includes(marker)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

/**
 * Pids of processes whose whole command line is `command` (e.g. the `sleep` itself, not the
 * shell or sandbox that will start it).
 * @param command the program and its arguments, space-separated.
 */
export async function processesExactly(command: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'latin1')).replaceAll('\0', ' ');
      if (cmdline.trim() === command) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

/** The `data` of a shell_exec result. */
export interface ExecData {
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  stdout: string;
  stderr: string;
  truncated: boolean;
}

/** A result's data as shell_exec's. */
export function execData(result: ToolResult): ExecData {
  return result.data as ExecData;
}
