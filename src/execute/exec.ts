import { spawn } from 'node:child_process';
import type { ExecOptions, ExecResult } from '../protocol/types.ts';
import { watchAbort } from './abort.ts';

/** Default bytes kept of stdout and of stderr each. */
export const DEFAULT_EXEC_OUTPUT_BYTES = 1024 * 1024;
/** How long a process group gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2_000;
/** How often an emptied process group is looked at until it is gone. */
const GROUP_POLL_MS = 25;

/**
 * The child processes of one tool call: each started in a process group of its own (never
 * through a shell), its output captured with a byte cap, and the whole group killed when the
 * call's signal aborts, when its own timeout passes, or when the process itself exits (nothing
 * the call started outlives it). {@link CallProcesses.idle} resolves once every group is gone,
 * which is when the call's concurrency slot is free again.
 */
export class CallProcesses {
  readonly #signal: AbortSignal;
  readonly #groups = new Set<number>();
  readonly #running = new Set<Promise<unknown>>();

  /** @param signal the call's signal: aborting it kills every group. */
  constructor(signal: AbortSignal) {
    this.#signal = signal;
  }

  /** Process groups still alive. */
  get groups(): number {
    return this.#groups.size;
  }

  /**
   * Run a program with an argument vector in a new process group.
   * @param file the program (a path, or a name looked up in the `PATH` of `env`).
   * @param args its arguments, each one element (never split, never a shell).
   * @param options cwd, the child's whole environment (default: `PATH` only), stdin, output cap,
   *   timeout.
   * @returns how it ended; rejects only when it could not be started.
   */
  exec(file: string, args: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (this.#signal.aborted) return Promise.reject(new Error('the call was aborted'));
    const cap = options.maxOutputBytes ?? DEFAULT_EXEC_OUTPUT_BYTES;
    const started = performance.now();
    const child = spawn(file, [...args], {
      cwd: options.cwd,
      env: { ...(options.env ?? { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }) },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const promise = new Promise<ExecResult>((resolve, reject) => {
      let killed = false;
      let truncated = false;
      const out = new Capped(cap);
      const err = new Capped(cap);
      child.stdout.on('data', (chunk: Buffer) => (truncated = out.push(chunk) || truncated));
      child.stderr.on('data', (chunk: Buffer) => (truncated = err.push(chunk) || truncated));
      child.stdin.on('error', () => undefined);
      if (options.input !== undefined) child.stdin.end(options.input);
      else child.stdin.end();
      const pid = child.pid;
      if (pid !== undefined) this.#groups.add(pid);
      const kill = (): void => {
        killed = true;
        if (pid !== undefined) this.#killGroup(pid);
      };
      const unwatch = watchAbort(this.#signal, kill);
      const timer =
        options.timeoutMs === undefined ? undefined : setTimeout(kill, options.timeoutMs);
      child.once('error', (error) => {
        unwatch();
        clearTimeout(timer);
        if (pid !== undefined) this.#groups.delete(pid);
        reject(error);
      });
      child.once('close', (code, signal) => {
        unwatch();
        clearTimeout(timer);
        // Nothing the program left behind in its group outlives it.
        if (pid !== undefined) this.#killGroup(pid);
        resolve({
          exitCode: code,
          signal,
          stdout: out.text(),
          stderr: err.text(),
          truncated,
          killed,
          durationMs: Math.round(performance.now() - started),
        });
      });
    });
    this.#running.add(promise);
    void promise.catch(() => undefined).finally(() => this.#running.delete(promise));
    return promise;
  }

  /** Kill every process group of the call (SIGTERM, then SIGKILL after a grace period). */
  killAll(): void {
    for (const pid of this.#groups) this.#killGroup(pid);
  }

  /**
   * Resolve when every program the call started has ended and its process group is empty.
   * @param deadlineMs give up waiting after this long (the groups are reported by `groups`).
   */
  async idle(deadlineMs = 30_000): Promise<boolean> {
    const until = performance.now() + deadlineMs;
    await Promise.allSettled([...this.#running]);
    while (this.#groups.size > 0 && performance.now() < until) {
      for (const pid of [...this.#groups]) if (!groupAlive(pid)) this.#groups.delete(pid);
      if (this.#groups.size > 0) await new Promise((r) => setTimeout(r, GROUP_POLL_MS));
    }
    return this.#groups.size === 0;
  }

  #killGroup(pid: number): void {
    if (!groupAlive(pid)) {
      this.#groups.delete(pid);
      return;
    }
    signalGroup(pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (groupAlive(pid)) signalGroup(pid, 'SIGKILL');
    }, KILL_GRACE_MS);
    timer.unref();
  }
}

/**
 * Send a signal to a whole process group (a child started `detached`, whose pid is its group's
 * id); nothing when the group is gone already.
 * @param pid the group's leader.
 * @param signal the signal.
 */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The first `cap` bytes of a stream, decoded as UTF-8 at the end. */
class Capped {
  readonly #cap: number;
  readonly #chunks: Buffer[] = [];
  #size = 0;
  #dropped = 0;

  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Keep what fits; true when something was dropped. */
  push(chunk: Buffer): boolean {
    const room = this.#cap - this.#size;
    if (room <= 0) {
      this.#dropped += chunk.length;
      return true;
    }
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#chunks.push(kept);
    this.#size += kept.length;
    this.#dropped += chunk.length - kept.length;
    return chunk.length > room;
  }

  text(): string {
    const text = Buffer.concat(this.#chunks).toString('utf8');
    return this.#dropped > 0 ? `${text}\n[… ${this.#dropped} more bytes not kept]` : text;
  }
}
