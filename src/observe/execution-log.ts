import { constants, createReadStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { open, readdir, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ApprovedBy, ResultError, ResultStatus } from '../protocol/types.ts';
import { errnoCode, isVanished, toVaultIoError, VaultIoError } from '../vault/fs-errors.ts';
import { makeFolderInVault } from '../vault/vault-writer.ts';

/** One executed call, as a line of `Logs/YYYY-MM-DD.jsonl`. */
export interface ExecutionLogEntry {
  readonly call_id: string;
  readonly tool: string;
  /** Vault-relative path of the note, or null for a call from elsewhere (CLI, HTTP). */
  readonly note: string | null;
  /** The call's parameters; null when the block could not be read as a call. */
  readonly parameters: Record<string, unknown> | null;
  readonly status: ResultStatus;
  readonly error: ResultError | null;
  readonly execution_time_ms: number;
  /** ISO time the call finished; its UTC date names the file. */
  readonly timestamp: string;
  readonly approved_by: ApprovedBy | null;
  /** The agent's parameters when a human modified them before approving. */
  readonly original_parameters?: Record<string, unknown>;
  /** Who let the call run and how: channel, who, the request, the policy rule or grant. */
  readonly decided_by?: {
    readonly channel: string;
    readonly by: string | null;
    readonly request: string | null;
    readonly rule: string | null;
  };
  /** Set when the recorded result of a call that already ran was written instead of running it. */
  readonly replay?: boolean;
}

/** Options of {@link ExecutionLog}. */
export interface ExecutionLogOptions {
  /**
   * How long after `append` its line is written at the latest, while no write is under way;
   * default 0: at the end of the event loop's turn (lines appended in one turn, or while a write
   * is under way, are written together).
   */
  flushDelayMs?: number;
  /** Told about a write that failed (the lines are dropped); default: ignored. */
  onError?: (error: unknown) => void;
  /**
   * Absolute path of the vault: `Logs/` must be its own folder, with no symbolic link on the way,
   * or nothing is written. Default: the folder above `logsDir`.
   */
  vault?: string;
}

const FILE_PATTERN = /^(\d{4}-\d{2}-\d{2})\.jsonl$/;
/** How long after a failed write the next is tried, in ms. */
const RETRY_DELAY_MS = 1000;

/**
 * The execution log (issue 3, item 9): one JSON line per executed call in `Logs/YYYY-MM-DD.jsonl`
 * (the UTC date of the entry's timestamp). Appends are written through one kept-open handle per
 * day, one write at a time: the lines appended in one turn of the event loop, or while a write is
 * under way, go out together as soon as it is done (several notes' lines per system call under
 * load), and on {@link ExecutionLog.flush} / {@link ExecutionLog.close}. Written right away, a
 * line is in the kernel's hands well before a kill could take it: a 100 ms timer lost the lines
 * of every call finished in the last 100 ms before a SIGKILL or the OOM killer, though their
 * notes were in `Done/`. Nothing is fsynced: a power cut can still take the last lines.
 *
 * A day's file is opened without following a link. One that is a symbolic link (an agent planting
 * today's or tomorrow's name to make vaultd append to a file outside the vault), a hard link, or
 * anything but a regular file is renamed aside (`<day>.jsonl.refused-<ms>`, never read back) and a
 * new file started, so the log goes on and nothing is written through the link; `onError` is told.
 * When `Logs/` itself is a link or resolves outside the vault, nothing is written and `onError`
 * is told how many lines were lost.
 */
export class ExecutionLog {
  readonly dir: string;
  private readonly flushDelayMs: number;
  private readonly onError: (error: unknown) => void;
  private readonly vault: string;
  private buffered = new Map<string, string[]>();
  private readonly handles = new Map<string, FileHandle>();
  /** The pending write of what was appended, and how to call it off. */
  private timer: { readonly cancel: () => void } | undefined;
  /** Writes under way (flush's chain): a line appended meanwhile is written right after them. */
  private writing = 0;
  /** Whether the last write failed for some day's file. */
  private failing = false;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  /**
   * @param logsDir absolute path of the `Logs/` folder; created on first write.
   * @param options `flushDelayMs` (default 0), `onError`, `vault` (default the folder above).
   */
  constructor(logsDir: string, options: ExecutionLogOptions = {}) {
    this.dir = logsDir;
    this.vault = options.vault ?? dirname(logsDir);
    this.flushDelayMs = options.flushDelayMs ?? 0;
    this.onError = options.onError ?? (() => undefined);
  }

  /**
   * Queue one entry; never throws (write failures go to `onError`).
   * @param entry the executed call.
   */
  append(entry: ExecutionLogEntry): void {
    if (this.closed) {
      this.onError(new Error(`execution log ${this.dir} is closed`));
      return;
    }
    const day = utcDay(entry.timestamp);
    let lines = this.buffered.get(day);
    if (lines === undefined) {
      lines = [];
      this.buffered.set(day, lines);
    }
    lines.push(`${JSON.stringify(entry)}\n`);
    // While a write is under way, its end writes this line (see flush).
    if (this.writing === 0) this.#schedule();
  }

  /** Write what was appended at the end of this turn (or after `flushDelayMs`), unless due already. */
  #schedule(): void {
    if (this.timer !== undefined) return;
    const due = (): void => {
      this.timer = undefined;
      void this.flush().catch(this.onError);
    };
    // After a failed write (Logs/ refused, a full disk), one attempt a second: not one error
    // logged per note.
    const delayMs = this.failing ? Math.max(this.flushDelayMs, RETRY_DELAY_MS) : this.flushDelayMs;
    if (delayMs > 0) {
      const timeout = setTimeout(due, delayMs);
      this.timer = { cancel: () => clearTimeout(timeout) };
    } else {
      const immediate = setImmediate(due);
      this.timer = { cancel: () => clearImmediate(immediate) };
    }
  }

  /** Write every buffered line now. */
  flush(): Promise<void> {
    if (this.timer !== undefined) {
      this.timer.cancel();
      this.timer = undefined;
    }
    const batch = this.buffered;
    this.buffered = new Map();
    this.writing += 1;
    const result = this.chain.then(() => this.write(batch));
    this.chain = result
      .catch(() => undefined)
      .then(() => {
        this.writing -= 1;
        // Lines appended while this write was under way go out now, together.
        if (this.writing === 0 && this.buffered.size > 0) this.#schedule();
      });
    return result;
  }

  /** Flush and close the day files; later appends are reported to `onError`. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush().catch(this.onError);
    for (const handle of this.handles.values()) await handle.close().catch(this.onError);
    this.handles.clear();
  }

  private async write(batch: Map<string, string[]>): Promise<void> {
    if (batch.size === 0) return;
    let failed = false;
    const days = [...batch.keys()].sort();
    const latest = days[days.length - 1] as string;
    for (const day of days) {
      const path = join(this.dir, `${day}.jsonl`);
      try {
        let handle = this.handles.get(day);
        if (handle === undefined) {
          // Logs/ is made only inside the vault, never through a link; a vault that went away is
          // never re-created here.
          try {
            await makeFolderInVault(this.vault, this.dir);
          } catch (error) {
            const lines = (batch.get(day) as string[]).length;
            const reason = error instanceof Error ? error.message : String(error);
            throw new VaultIoError(
              'append',
              path,
              Object.assign(
                new Error(`${lines} line(s) not written: ${reason}`, { cause: error }),
                {
                  code: errnoCode(error),
                },
              ),
            );
          }
          handle = await openLogFile(path, this.onError);
          this.handles.set(day, handle);
          // A crash may have left a torn last line: start ours on a fresh one.
          if (!(await endsWithNewline(handle))) (batch.get(day) as string[]).unshift('\n');
        }
        await handle.writeFile((batch.get(day) as string[]).join(''), 'utf8');
      } catch (error) {
        failed = true;
        this.onError(toVaultIoError('append', path, error));
      }
    }
    this.failing = failed;
    // Keep only the newest day's file open: older days get a late line rarely.
    for (const [day, handle] of this.handles) {
      if (day < latest) {
        this.handles.delete(day);
        await handle.close().catch(this.onError);
      }
    }
  }
}

/**
 * Open a day's file for appending, never through a link: a file that is not a regular file with
 * one name is renamed aside and a new one made in its place.
 */
async function openLogFile(path: string, onError: (error: unknown) => void): Promise<FileHandle> {
  for (let attempt = 0; ; attempt++) {
    let handle: FileHandle | undefined;
    let problem: string | undefined;
    try {
      // O_NONBLOCK: a fifo there fails the checks at once instead of holding a thread.
      handle = await open(path, LOG_FLAGS, 0o644);
      const stats = await handle.stat();
      if (stats.isFile() && stats.nlink === 1) return handle;
      problem = stats.isFile() ? 'a hard link to another file' : 'not a regular file';
    } catch (error) {
      const code = errnoCode(error);
      // ELOOP (EMLINK on FreeBSD): a symbolic link at the last component, not followed.
      if (code === 'ELOOP' || code === 'EMLINK') problem = 'a symbolic link';
      else if (code === 'EISDIR') problem = 'a folder';
      else throw error;
    }
    await handle?.close().catch(() => undefined);
    if (attempt >= 3) {
      throw Object.assign(new Error(`${path} is ${problem} again and again; nothing written`), {
        code: 'EOUTSIDE',
      });
    }
    const aside = `${path}.refused-${Date.now()}`;
    await rename(path, aside);
    onError(
      Object.assign(
        new Error(
          `${path} was ${problem}: vaultd wrote nothing through it, renamed it to ${aside} and started a new file`,
        ),
        { code: 'EOUTSIDE' },
      ),
    );
  }
}

const LOG_FLAGS =
  constants.O_RDWR |
  constants.O_APPEND |
  constants.O_CREAT |
  constants.O_NOFOLLOW |
  constants.O_NONBLOCK;

/** Options of {@link readExecutionLog}. */
export interface ReadExecutionLogOptions {
  /** Only entries whose timestamp is at or after this time. */
  since?: Date;
}

/**
 * Read the execution log back, oldest day first, skipping torn or foreign lines.
 * @param logsDir absolute path of the `Logs/` folder; a missing folder has no entries.
 * @param options `since`.
 */
export async function* readExecutionLog(
  logsDir: string,
  options: ReadExecutionLogOptions = {},
): AsyncIterable<ExecutionLogEntry> {
  let names: string[];
  try {
    names = await readdir(logsDir);
  } catch (error) {
    if (isVanished(error)) return;
    throw toVaultIoError('readdir', logsDir, error);
  }
  const since = options.since?.getTime();
  const firstDay = options.since === undefined ? '' : utcDay(options.since.toISOString());
  const days = names
    .map((name) => FILE_PATTERN.exec(name)?.[1])
    .filter((day): day is string => day !== undefined && day >= firstDay)
    .sort();
  for (const day of days) {
    const stream = createReadStream(join(logsDir, `${day}.jsonl`), { encoding: 'utf8' });
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    try {
      for await (const line of lines) {
        const entry = parseEntry(line);
        if (entry === null) continue;
        if (since !== undefined && !(Date.parse(entry.timestamp) >= since)) continue;
        yield entry;
      }
    } catch (error) {
      if (!isVanished(error)) throw toVaultIoError('read', join(logsDir, `${day}.jsonl`), error);
    } finally {
      lines.close();
      stream.destroy();
    }
  }
}

async function endsWithNewline(handle: FileHandle): Promise<boolean> {
  const { size } = await handle.stat();
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  await handle.read(last, 0, 1, size - 1);
  return last[0] === 0x0a;
}

function utcDay(timestamp: string): string {
  const time = Date.parse(timestamp);
  return (Number.isNaN(time) ? new Date() : new Date(time)).toISOString().slice(0, 10);
}

function parseEntry(line: string): ExecutionLogEntry | null {
  if (line.trim() === '') return null;
  try {
    const value = JSON.parse(line) as Partial<ExecutionLogEntry> | null;
    if (value === null || typeof value !== 'object') return null;
    if (typeof value.call_id !== 'string' || typeof value.tool !== 'string') return null;
    if (typeof value.timestamp !== 'string' || typeof value.status !== 'string') return null;
    return value as ExecutionLogEntry;
  } catch {
    return null;
  }
}
