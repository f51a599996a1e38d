import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { waitFor } from './wait-for.ts';
import { CONFIG_DEFAULTS } from '../../src/config/defaults.ts';
import { readClaimedName } from '../../src/vault/claim.ts';

/** The repository root. */
export const ROOT = new URL('../..', import.meta.url).pathname;
/** The CLI as the README starts it. */
export const BIN = join(ROOT, 'bin', 'vaultd.js');

/** A temp vault with helpers to drop notes and look at folders. */
export interface TempVault {
  readonly root: string;
  readonly configPath: string;
  /** Write a note atomically into a folder (default `Needs_Action`), as a careful agent does. */
  drop(name: string, text: string, folder?: string): Promise<string>;
  /** Names of the `.md` files in a folder. */
  list(folder: string): Promise<string[]>;
  read(folder: string, name: string): Promise<string>;
  /** The folder a note of that name is in now, or undefined. */
  whereIs(name: string): Promise<string | undefined>;
  cleanup(): Promise<void>;
}

/** The folders a note can be in, SPEC section 1. */
export const STATE_FOLDERS = (({
  inbox,
  in_progress,
  pending,
  approved,
  rejected,
  done,
  failed,
}) => [inbox, in_progress, pending, approved, rejected, done, failed])(CONFIG_DEFAULTS.folders);

/**
 * Make a temp vault with a config file.
 * @param configYaml extra config YAML appended after `vault: .`.
 */
export async function makeVault(configYaml = ''): Promise<TempVault> {
  const root = await mkdtemp(join(tmpdir(), 'vaultd-test-'));
  for (const f of STATE_FOLDERS) await mkdir(join(root, f), { recursive: true });
  const configPath = join(root, 'vaultd.yaml');
  await writeFile(
    configPath,
    `vault: .\nreconcile_cron: '*/2 * * * * *'\nlog:\n  level: debug\n${configYaml}`,
  );
  let seq = 0;
  const vault: TempVault = {
    root,
    configPath,
    async drop(name, text, folder = 'Needs_Action') {
      const tmp = join(root, `.drop-${process.pid}-${seq++}.tmp`);
      await writeFile(tmp, text);
      const dest = join(root, folder, name);
      await rename(tmp, dest);
      return dest;
    },
    async list(folder) {
      if (!existsSync(join(root, folder))) return [];
      // A claimed note carries a claim tag in In_Progress/: list it under its own name.
      return (await readdir(join(root, folder)))
        .filter((n) => n.endsWith('.md'))
        .map((n) => readClaimedName(n).original)
        .sort();
    },
    async read(folder, name) {
      const names = existsSync(join(root, folder)) ? await readdir(join(root, folder)) : [];
      const actual =
        names.find((n) => n === name) ??
        names.find((n) => readClaimedName(n).original === name) ??
        name;
      return readFile(join(root, folder, actual), 'utf8');
    },
    async whereIs(name) {
      for (const f of STATE_FOLDERS) if ((await vault.list(f)).includes(name)) return f;
      return undefined;
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
  return vault;
}

/**
 * The path a note of this name has in `In_Progress/` while claimed (a claim tag is added to its
 * name), or undefined when it is not there.
 * @param vault the temp vault.
 * @param name the note's own name.
 */
export async function claimedPath(vault: TempVault, name: string): Promise<string | undefined> {
  const dir = join(vault.root, 'In_Progress');
  if (!existsSync(dir)) return undefined;
  const found = (await readdir(dir)).find((n) => readClaimedName(n).original === name);
  return found === undefined ? undefined : join(dir, found);
}

/** A daemon child process with its output collected. */
export interface DaemonProcess {
  readonly child: ChildProcess;
  /** stdout + stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name). */
  readonly exited: Promise<number | string>;
  /** Wait until the log says the daemon is ready. */
  ready(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<number | string>;
}

/**
 * Daemons started by {@link startCli} and still running: killed once every test of the file has
 * run (a hook on the file's root test). A daemon a failed test left running kept the file's
 * process alive through its pipes, and the whole suite waited for it for ever (seen under load,
 * where a start took longer than `ready` waits). Not `--test-force-exit`: it ended a file's
 * process before its last results reached the runner, which then counted fewer tests (65 of 67
 * in one of six runs of test/approval/policy.test.ts).
 */
const running = new Set<ChildProcess>();
after(() => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Start `vaultd <command>` as a child process, the way the README does.
 * @param args CLI arguments, e.g. `['run', '--config', path]`.
 * @param env extra environment.
 * @param nodeArgs options for node itself, before the script (e.g. `--trace-gc`).
 */
export function startCli(
  args: readonly string[],
  env: Record<string, string> = {},
  nodeArgs: readonly string[] = [],
): DaemonProcess {
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? -1);
    });
  });
  let exitedAlready = false;
  void exited.then(() => (exitedAlready = true));
  return {
    child,
    output: () => out,
    exited,
    ready: async () => {
      try {
        // Generous: a start on a loaded machine took over 20 s.
        await waitFor(() => out.includes('"vaultd ready"') || exitedAlready, {
          timeoutMs: 60_000,
          message: 'daemon ready',
        });
      } catch (error) {
        child.kill('SIGKILL');
        throw error;
      }
      if (exitedAlready) throw new Error(`daemon exited early:\n${out}`);
    },
    stop: async () => {
      if (!exitedAlready) child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * Run the CLI to completion; resolves with its exit code and output.
 * @param args CLI arguments.
 * @param env extra environment.
 * @param options `cwd`: the folder it runs in (default: the repository root).
 */
export async function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  options: { cwd?: string } = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | string>((resolve) =>
    child.on('exit', (c, s) => resolve(c ?? s ?? -1)),
  );
  return { code, stdout, stderr };
}

/** A note with front-matter and the given fenced blocks. */
export function note(title: string, ...blocks: string[]): string {
  return `---\ntitle: ${title}\n---\n# ${title}\n\n${blocks.join('\n\n')}\n`;
}

/** A fenced json tool_call block. */
export function callBlock(name: string, parameters: Record<string, unknown>, id?: string): string {
  const call = id === undefined ? { name, parameters } : { id, name, parameters };
  return '```json\n' + JSON.stringify({ tool_call: call }) + '\n```';
}

/** A `tool_result` as written into a note. */
export interface WrittenResult {
  id: string;
  name: string;
  status: string;
  success: boolean;
  content: string;
  data?: unknown;
  error: { code: string; message: string } | null;
  metadata: Record<string, unknown>;
}

/** Parse every `tool_result` JSON block of a note. */
export function resultsOf(text: string): WrittenResult[] {
  const out: WrittenResult[] = [];
  const re = /^(`{3,}|~{3,})json[^\n]*\n([\s\S]*?)\n\1\s*$/gm;
  for (const m of text.matchAll(re)) {
    try {
      const value = JSON.parse(m[2] ?? '') as { tool_result?: WrittenResult };
      if (value.tool_result) out.push(value.tool_result);
    } catch {
      // not JSON: a user's block
    }
  }
  return out;
}

/** The test tools' plugin module (`slow_echo`, `side_effect`, `danger_zone`). */
export const TEST_PLUGIN = join(ROOT, 'test/fixtures/plugins/test-tools.ts');

/**
 * A temp vault whose config loads the test tools, with `side_effect` logging to
 * `<vault>/side-effects.log`, and a running daemon on it.
 * @param extraYaml top-level config lines added (e.g. `settle_ms: 300`).
 */
export async function startPluginDaemon(
  extraYaml = '',
): Promise<{ vault: TempVault; daemon: DaemonProcess; sideLog: string }> {
  const vault = await makeVault();
  const sideLog = join(vault.root, 'side-effects.log');
  await writeFile(
    vault.configPath,
    (await readFile(vault.configPath, 'utf8')) +
      `${extraYaml}plugins:\n  - ${TEST_PLUGIN}\ntools:\n  side_effect:\n    log: ${sideLog}\n  danger_zone:\n    log: ${join(vault.root, 'danger.log')}\n`,
  );
  const daemon = startCli(['run', '--config', vault.configPath]);
  await daemon.ready();
  return { vault, daemon, sideLog };
}
