import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ToolError } from '../../protocol/errors.ts';
import { killTagged } from './sweep.ts';
import { signalGroup } from '../../execute/exec.ts';

/** Where a background job is. */
export type JobState = 'running' | 'exited' | 'killed' | 'timed_out' | 'interrupted';

/** A background job as recorded in `<stateDir>/jobs/<id>.json`. */
export interface JobRecord {
  readonly id: string;
  /** The command line as run (normalised). */
  readonly command: string;
  /** The working directory as the agent sees it. */
  readonly cwd: string;
  readonly started_at: string;
  readonly ended_at: string | null;
  readonly state: JobState;
  readonly exit_code: number | null;
  readonly signal: string | null;
  readonly timeout_s: number;
  /** Why it ended when it did not exit by itself. */
  readonly reason: string | null;
  /** The sandbox's tag, to find what is left of it. */
  readonly tag: string;
}

/** The pattern of a job id. */
export const JOB_ID_PATTERN = '^job_[0-9a-f]{12}$';

/** How a job is started. */
export interface JobLaunch {
  readonly argv: readonly string[];
  /** The child's own environment (the sandbox sets the command's). */
  readonly env: Readonly<Record<string, string>>;
  /** Real path of the working directory. */
  readonly cwdPath: string;
  readonly cwd: string;
  readonly command: string;
  readonly timeoutS: number;
  readonly tag: string;
}

interface Live {
  readonly child: ChildProcess;
  record: JobRecord;
  readonly timer: NodeJS.Timeout;
  /** Set when vaultd ends the job, to the state and reason it ends with. */
  ending?: { state: JobState; reason: string };
  /** Set once the job's process has exited: nothing is signalled or relabelled after. */
  gone?: boolean;
  readonly exited: Promise<void>;
}

const KILL_GRACE_MS = 2_000;
const TAIL_BYTES = 2_048;

/**
 * The background jobs of the shell pack: each a sandboxed command in a process group of its own
 * whose output (stdout and stderr together) goes to `<id>.log`, with a record `<id>.json` that
 * outlives the daemon. A job still marked running when the store opens was running when vaultd
 * stopped or crashed: it is recorded as `interrupted`, never restarted.
 */
export class JobStore {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #live = new Map<string, Live>();
  readonly #maxJobs: number;
  /** Jobs being started (their checks passed, not in `#live` yet). */
  #starting = 0;
  readonly #keepJobs: number;
  #stopped = false;

  /**
   * @param dir the folder of job records and logs.
   * @param options running jobs allowed at once, finished records kept, logger.
   */
  constructor(dir: string, options: { maxJobs: number; keepJobs: number; logger: Logger }) {
    this.#dir = dir;
    this.#maxJobs = options.maxJobs;
    this.#keepJobs = options.keepJobs;
    this.#logger = options.logger;
  }

  /** Create the folder, mark jobs left running by an earlier daemon interrupted, prune old ones. */
  async open(): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
    const leftovers: string[] = [];
    for (const record of await this.#records()) {
      if (record.state !== 'running') continue;
      leftovers.push(record.tag);
      await this.#write({
        ...record,
        state: 'interrupted',
        ended_at: record.ended_at ?? new Date().toISOString(),
        reason: 'vaultd stopped while the job ran; it was not restarted',
      });
    }
    // Jobs die with the daemon that started them; a sweep catches any that did not.
    await killTagged(leftovers);
    await this.#prune();
  }

  /**
   * Start a job; resolves once it has started.
   * @param launch its argument vector, environment, working directory and timeout.
   * @throws ToolError `EXECUTION_FAILED` when too many jobs run, or the program cannot start.
   */
  async start(launch: JobLaunch): Promise<JobRecord> {
    if (this.#stopped) throw new ToolError('EXECUTION_FAILED', 'vaultd is stopping');
    // Counted before the first await: calls made at once all passed the check while none was
    // counted yet, and eight jobs ran under max_jobs 1 (review finding).
    if (this.#live.size + this.#starting >= this.#maxJobs) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${this.#live.size + this.#starting} background jobs are running, the most tools.shell.max_jobs allows; wait for one to end or kill one with shell_job_kill`,
        { recoverable: true },
      );
    }
    this.#starting++;
    try {
      return await this.#start(launch);
    } finally {
      this.#starting--;
    }
  }

  async #start(launch: JobLaunch): Promise<JobRecord> {
    const id = `job_${randomBytes(6).toString('hex')}`;
    const log = await open(join(this.#dir, `${id}.log`), 'a', 0o600);
    const [file, ...args] = launch.argv;
    let child: ChildProcess;
    let started: Promise<Error | null>;
    let exit: Promise<[number | null, NodeJS.Signals | null]>;
    try {
      child = spawn(file ?? '/bin/false', args, {
        cwd: launch.cwdPath,
        env: { ...launch.env },
        detached: true,
        stdio: ['ignore', log.fd, log.fd],
      });
      const spawned = child;
      started = new Promise<Error | null>((resolve) => {
        spawned.once('spawn', () => resolve(null));
        spawned.once('error', resolve);
      });
      // Listened for at once: a job may end before its record is written.
      exit = new Promise((resolve) => spawned.once('exit', (code, sig) => resolve([code, sig])));
    } finally {
      await log.close();
    }
    const failed = await started;
    if (failed !== null) {
      throw new ToolError('EXECUTION_FAILED', `could not start the job: ${failed.message}`);
    }
    const record: JobRecord = {
      id,
      command: launch.command,
      cwd: launch.cwd,
      started_at: new Date().toISOString(),
      ended_at: null,
      state: 'running',
      exit_code: null,
      signal: null,
      timeout_s: launch.timeoutS,
      reason: null,
      tag: launch.tag,
    };
    await this.#write(record);
    let resolveExit: () => void = () => undefined;
    const exited = new Promise<void>((resolve) => (resolveExit = resolve));
    const timer = setTimeout(() => {
      this.#end(id, 'timed_out', `the job ran longer than its timeout of ${launch.timeoutS} s`);
    }, launch.timeoutS * 1000);
    const live: Live = { child, record, timer, exited };
    this.#live.set(id, live);
    void exit.then(([code, signal]) => {
      clearTimeout(timer);
      void this.#finish(live, code, signal).finally(resolveExit);
    });
    return record;
  }

  /**
   * A job's record, as it is now.
   * @param id the job id.
   * @throws ToolError `INVALID_PARAMS` for an unknown id.
   */
  async get(id: string): Promise<JobRecord> {
    const live = this.#live.get(id);
    if (live !== undefined) return live.record;
    try {
      return JSON.parse(await readFile(join(this.#dir, `${id}.json`), 'utf8')) as JobRecord;
    } catch {
      throw new ToolError(
        'INVALID_PARAMS',
        `there is no job ${id}; shell_background returns the job_id to use`,
      );
    }
  }

  /**
   * Size of a job's log in bytes.
   * @param id the job id.
   */
  async logSize(id: string): Promise<number> {
    return stat(join(this.#dir, `${id}.log`)).then(
      (s) => s.size,
      () => 0,
    );
  }

  /**
   * Read part of a job's output (stdout and stderr as written, interleaved).
   * @param id the job id.
   * @param offset the byte to start at.
   * @param maxBytes at most this many bytes; fewer when the cut would split a UTF-8 character.
   */
  async read(
    id: string,
    offset: number,
    maxBytes: number,
  ): Promise<{ text: string; next: number; size: number }> {
    const size = await this.logSize(id);
    if (offset >= size) return { text: '', next: Math.max(offset, size), size };
    const handle = await open(join(this.#dir, `${id}.log`), 'r');
    try {
      const buffer = Buffer.alloc(Math.min(maxBytes, size - offset));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      let whole = completeUtf8(buffer.subarray(0, bytesRead), offset + bytesRead >= size);
      // Nothing whole fits (max_bytes under the character at offset, or an offset inside one):
      // the bytes read are given, with replacement characters, so a reader always moves on (it
      // got the same empty part for ever: review finding).
      if (whole.length === 0 && bytesRead > 0) whole = buffer.subarray(0, bytesRead);
      return { text: whole.toString('utf8'), next: offset + whole.length, size };
    } finally {
      await handle.close();
    }
  }

  /**
   * The last bytes of a job's output.
   * @param id the job id.
   */
  async tail(id: string): Promise<string> {
    const size = await this.logSize(id);
    const from = Math.max(0, size - TAIL_BYTES);
    const { text } = await this.read(id, from, TAIL_BYTES);
    // A cut at the start may split a character: drop what precedes the first whole line or char.
    return from > 0 ? text.replace(/^[\uFFFD]+/, '') : text;
  }

  /**
   * Kill a running job with its whole process group; resolves when it has ended.
   * @param id the job id.
   * @returns the record after the kill (an ended job is returned as it is).
   */
  async kill(id: string): Promise<JobRecord> {
    const live = this.#live.get(id);
    if (live === undefined) return this.get(id);
    this.#end(id, 'killed', 'killed with shell_job_kill');
    await live.exited;
    return this.get(id);
  }

  /** Kill every running job (daemon shutdown); they are recorded as interrupted. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const live = [...this.#live.values()];
    for (const job of live) this.#end(job.record.id, 'interrupted', 'vaultd stopped');
    await Promise.all(live.map((job) => job.exited));
  }

  /** Ids of running jobs. */
  running(): string[] {
    return [...this.#live.keys()];
  }

  #end(id: string, state: JobState, reason: string): void {
    const live = this.#live.get(id);
    if (live === undefined || live.ending !== undefined || live.gone === true) return;
    live.ending = { state, reason };
    clearTimeout(live.timer);
    const pid = live.child.pid;
    if (pid === undefined) return;
    signalGroup(pid, 'SIGTERM');
    const grace = setTimeout(() => signalGroup(pid, 'SIGKILL'), KILL_GRACE_MS);
    grace.unref();
    void live.exited.then(() => clearTimeout(grace));
  }

  async #finish(live: Live, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    live.gone = true;
    const pid = live.child.pid;
    // How the job ended is known now: a kill asked for during the sweep below came after the
    // job had exited on its own, and recorded it killed (review finding).
    const ending = live.ending;
    // Nothing the job started outlives it: its group, then anything still carrying its tag.
    if (pid !== undefined) signalGroup(pid, 'SIGKILL');
    await killTagged([live.record.tag]);
    live.record = {
      ...live.record,
      state: ending?.state ?? 'exited',
      ended_at: new Date().toISOString(),
      exit_code: code,
      signal,
      reason: ending?.reason ?? null,
    };
    this.#live.delete(live.record.id);
    try {
      await this.#write(live.record);
      await this.#prune();
    } catch (error) {
      this.#logger.error({ err: error, job: live.record.id }, 'could not record a job ending');
    }
  }

  async #write(record: JobRecord): Promise<void> {
    const path = join(this.#dir, `${record.id}.json`);
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(record, null, 2) + '\n', { mode: 0o600 });
    await rename(tmp, path);
  }

  async #records(): Promise<JobRecord[]> {
    return readJobRecords(this.#dir, (file, error) =>
      this.#logger.warn({ err: error, file }, 'unreadable job record left as it is'),
    );
  }

  async #prune(): Promise<void> {
    const ended = (await this.#records())
      .filter((r) => r.state !== 'running' && !this.#live.has(r.id))
      .sort((a, b) => (a.started_at < b.started_at ? 1 : -1));
    for (const old of ended.slice(this.#keepJobs)) {
      await rm(join(this.#dir, `${old.id}.json`), { force: true });
      await rm(join(this.#dir, `${old.id}.log`), { force: true });
    }
  }
}

/**
 * The job records in a folder, newest first (for `vaultd status` too, which reads them without
 * the daemon).
 * @param dir the jobs folder, `<vault>/.vaultd/packs/shell/jobs`.
 * @param onUnreadable told about a record that is not JSON; default: skipped silently.
 */
export async function readJobRecords(
  dir: string,
  onUnreadable: (file: string, error: unknown) => void = () => undefined,
): Promise<JobRecord[]> {
  const out: JobRecord[] = [];
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!/^job_[0-9a-f]{12}\.json$/.test(name)) continue;
    try {
      out.push(JSON.parse(await readFile(join(dir, name), 'utf8')) as JobRecord);
    } catch (error) {
      onUnreadable(name, error);
    }
  }
  return out.sort((a, b) => (a.started_at < b.started_at ? 1 : -1));
}

/**
 * Cut a chunk so that it does not end inside a UTF-8 character (unless it is the end of the file,
 * where the bytes are what they are).
 */
function completeUtf8(chunk: Buffer, atEnd: boolean): Buffer {
  if (atEnd || chunk.length === 0) return chunk;
  // Look back over at most 3 continuation bytes for the lead byte of the last character.
  for (let back = 1; back <= Math.min(4, chunk.length); back++) {
    const byte = chunk[chunk.length - back] ?? 0;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? chunk.subarray(0, chunk.length - back) : chunk;
  }
  return chunk;
}
