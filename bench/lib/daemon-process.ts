import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { waitUntil } from './wait-until.ts';

/** The CLI, started the way the README starts it. */
export const BIN = new URL('../../bin/vaultd.js', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;
const TAIL_CHARS = 16_384;

const children = new Set<ChildProcess>();

/** A `vaultd` child process. */
export interface DaemonProcess {
  readonly pid: number;
  /** `performance.now()` just before the spawn. */
  readonly spawnedAt: number;
  /** `performance.now()` when the `vaultd ready` log line arrived, once it has. */
  readyAt(): number | undefined;
  /** Wait for the `vaultd ready` log line (needs log level info or lower). */
  waitReady(timeoutMs: number): Promise<number>;
  /** The last few KB of stdout + stderr. */
  tail(): string;
  /** The exit code or signal, once exited. */
  exitCode(): number | string | undefined;
  /** Resolves with the exit code or signal. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs` (default 10 s); resolves when it exited. */
  stop(graceMs?: number): Promise<number | string>;
}

/**
 * Start `vaultd <command> --config <configPath>` as a child process.
 * @param command `run` or `once`.
 * @param configPath the config file.
 * @param nodeArgs extra arguments for node itself (e.g. `--cpu-prof`).
 */
export function spawnDaemon(
  command: 'run' | 'once',
  configPath: string,
  nodeArgs: readonly string[] = [],
): DaemonProcess {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, BIN, command, '--config', configPath], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let tail = '';
  let readyAt: number | undefined;
  let code: number | string | undefined;
  const collect = (chunk: Buffer): void => {
    const text = chunk.toString();
    if (readyAt === undefined && (tail.slice(-64) + text).includes('"msg":"vaultd ready"'))
      readyAt = performance.now();
    tail = (tail + text).slice(-TAIL_CHARS);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (c, s) => {
      code = c ?? s ?? -1;
      children.delete(child);
      resolve(code);
    });
    child.on('error', (error) => {
      code = `spawn error: ${error.message}`;
      children.delete(child);
      resolve(code);
    });
  });
  const stop = async (graceMs = 10_000): Promise<number | string> => {
    if (code !== undefined) return code;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const result = await exited;
    clearTimeout(timer);
    return result;
  };
  if (child.pid === undefined) throw new Error(`could not start ${BIN}`);
  return {
    pid: child.pid,
    spawnedAt,
    readyAt: () => readyAt,
    async waitReady(timeoutMs) {
      await waitUntil(
        () => readyAt !== undefined || code !== undefined,
        timeoutMs,
        'the "vaultd ready" log line',
        10,
      );
      if (readyAt === undefined)
        throw new Error(`vaultd exited (${String(code)}) before it was ready:\n${tail}`);
      return readyAt;
    },
    tail: () => tail,
    exitCode: () => code,
    exited,
    stop,
  };
}

/** Kill every child still running (SIGKILL): the last resort at exit. */
export function killAllDaemons(): void {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
}

/** Stop every child still running, politely first; resolves when all exited. */
export async function stopAllDaemons(): Promise<void> {
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
          setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
        }),
    ),
  );
}
