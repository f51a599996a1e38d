import {
  close,
  closeSync,
  constants,
  fchmod,
  fchmodSync,
  fstat,
  fstatSync,
  fsync,
  lstat as lstatCallback,
  lstatSync,
  open,
  openSync,
  read,
  readSync,
  realpath as realpathCallback,
  realpathSync,
  rename as renameCallback,
  renameSync,
  unlink,
  write,
  writeSync,
  type Stats,
} from 'node:fs';
import { performance } from 'node:perf_hooks';
import { sliceElapsed } from '../protocol/slice.ts';

// The file-system calls of a note's path through the daemon (read, claim, write back, move), on
// Node's callback API. `fs/promises` does the same system calls, but each goes through a
// FileHandle and its promise machinery: measured on this project's bench machine, reading a 1 KB
// note (open, fstat, read, close) cost about 65 µs of main-thread time through a FileHandle and
// 37 µs as one callback chain, and a single lstat or rename about 20 and 15 µs, so these calls
// cost the main thread roughly half of what they did (bench/README.md, item 17). Everything else
// keeps `fs/promises`. Errors are the same Node errors (code, syscall, path).
//
// A note on its own goes faster without the thread pool: each call there is a round trip (a pool
// thread woken, the loop woken back), 0.1–0.2 ms on a VM whose idle cores sleep, and a note's way
// has about a dozen of them. So while none of this module's calls is out in the pool, the metadata
// calls (lstat, rename, realpath), a note's read and a new file's create and write (into the page
// cache) run synchronously on the main thread, where a local disk answers well within a
// millisecond (0.1–0.15 ms a call on average on the bench VM, a note's read or write counted as
// one); files of 64 KiB or more, and every fsync (which waits for the disk), go to the pool.
// Under load something is always out (an fsync), so every call goes to the pool and the main
// thread never waits on a file system shared with them (a rename waits for its folder's lock).
// When the synchronous calls' durations average over SLOW_AVERAGE_MS (a moving average of about
// the last 20: a slow or network file system), the fast path is off for SLOW_SYNC_PAUSE_MS; a
// call of a few ms now and then (a journal commit, the VM taking the core away) does not turn it
// off. bench/README.md, item 57.

/** Past this moving average of synchronous calls' durations, in ms, the fast path pauses. */
const SLOW_AVERAGE_MS = 1;
/** Each call's weight in the moving average. */
const AVERAGE_WEIGHT = 0.05;
/** How long the fast path stays off then, in ms. */
const SLOW_SYNC_PAUSE_MS = 60_000;

/** This module's calls out in the thread pool now. */
let outstanding = 0;
/** `performance.now()` before which no call is made synchronously. */
let syncOffUntil = 0;
/** The moving average of synchronous calls' durations, in ms. */
let average = 0;
/** Whether the fast path is allowed at all. */
let fastPathAllowed = true;
/** The part of a slice of the main thread (`SLICE_MS`, 8) the fast path may use, in ms. */
const FAST_SLICE_MS = 4;
/** The limit of the average in use (tests change it). */
let averageLimitMs = SLOW_AVERAGE_MS;
/** The part of the main thread's slice the fast path may use, in ms (tests change it). */
let sliceLimitMs = FAST_SLICE_MS;

/**
 * Set up the synchronous fast path, and forget a pause and the average: for tests of both paths.
 * @param options `allowed` (default true): whether calls may run synchronously when nothing is
 *   out in the pool; `averageLimitMs` (default 1): past this average of synchronous calls'
 *   durations it pauses; `sliceLimitMs` (default 4): the part of the main thread's slice it may
 *   use (a test that is not about the slice sets Infinity, so that a busy machine's preemption
 *   between its lines cannot send its call to the pool).
 */
export function configureFastPath(
  options: { allowed?: boolean; averageLimitMs?: number; sliceLimitMs?: number } = {},
): void {
  fastPathAllowed = options.allowed ?? true;
  averageLimitMs = options.averageLimitMs ?? SLOW_AVERAGE_MS;
  sliceLimitMs = options.sliceLimitMs ?? FAST_SLICE_MS;
  syncOffUntil = 0;
  average = 0;
}

/** Whether a call made now would run synchronously on the main thread (for tests). */
export function fastPathOpen(): boolean {
  return fast();
}

/**
 * Whether the next call may run synchronously on the main thread: nothing out in the pool, no
 * pause, and less than FAST_SLICE_MS of the main thread's slice used (one note's way takes about
 * 1–2 ms). Notes that need nothing but a read (the inbox's notes without a call) would otherwise
 * follow one another in one chain of microtasks: 20,000 of them at start held the event loop
 * 300–350 ms. A call made through the pool lets it turn.
 */
function fast(): boolean {
  return (
    fastPathAllowed &&
    outstanding === 0 &&
    performance.now() >= syncOffUntil &&
    sliceElapsed() < sliceLimitMs
  );
}

/**
 * Count a synchronous call's duration into the average; past the limit, the fast path pauses.
 * Exported for tests, which cannot make a call slow at will.
 * @param ms how long the call took.
 */
export function noteSyncCall(ms: number): void {
  average += (ms - average) * AVERAGE_WEIGHT;
  if (average <= averageLimitMs) return;
  const pause = { averageMs: average, pauseMs: SLOW_SYNC_PAUSE_MS };
  syncOffUntil = performance.now() + SLOW_SYNC_PAUSE_MS;
  average = 0;
  for (const listener of pauseListeners) listener(pause);
}

/** What a pause of the fast path is told with. */
export interface FastPathPause {
  /** The average of the synchronous calls' durations that crossed the limit, in ms. */
  readonly averageMs: number;
  /** How long every call goes to the pool now, in ms. */
  readonly pauseMs: number;
}

const pauseListeners = new Set<(pause: FastPathPause) => void>();

/**
 * Be told when the fast path pauses (the daemon logs it: the file system is slow).
 * @param listener called at each pause; it must not throw.
 * @returns a function that stops telling it.
 */
export function onFastPathPause(listener: (pause: FastPathPause) => void): () => void {
  pauseListeners.add(listener);
  return () => pauseListeners.delete(listener);
}

/** Count a synchronous call that started at `startedAt`. */
function timed(startedAt: number): void {
  noteSyncCall(performance.now() - startedAt);
}

/**
 * A call run synchronously when the fast path allows it, else through the thread pool.
 * @param syncCall the synchronous form.
 * @param poolCall the callback form.
 */
function either<A extends unknown[], R>(
  syncCall: (...args: A) => R,
  poolCall: (...args: [...A, (error: NodeJS.ErrnoException | null, value: R) => void]) => void,
): (...args: A) => Promise<R> {
  return (...args: A): Promise<R> => {
    if (fast()) {
      const startedAt = performance.now();
      try {
        return Promise.resolve(syncCall(...args));
      } catch (error) {
        return Promise.reject(error as Error);
      } finally {
        timed(startedAt);
      }
    }
    // A call refused before it reaches the pool (a path with a NUL byte) throws in the executor:
    // a rejection, counted back like any other.
    return tracked(
      new Promise<R>((resolve, reject) => {
        poolCall(...args, (error, value) => {
          if (error !== null) reject(error);
          else resolve(value);
        });
      }),
    );
  };
}

/** `lstat`, as `fs/promises` has it. */
export const lstat: (path: string) => Promise<Stats> = either(
  (path: string) => lstatSync(path),
  (path: string, done: (error: NodeJS.ErrnoException | null, stats: Stats) => void) =>
    lstatCallback(path, done),
);
/** `rename`, as `fs/promises` has it. */
export const rename: (from: string, to: string) => Promise<void> = either(
  (from: string, to: string) => renameSync(from, to),
  (from: string, to: string, done: (error: NodeJS.ErrnoException | null, value: void) => void) =>
    renameCallback(from, to, (error) => done(error, undefined)),
);
/** The system's `realpath(3)`, as `fs/promises.realpath` (not the JavaScript `fs.realpath`). */
export const realpath: (path: string) => Promise<string> = either(
  (path: string) => realpathSync.native(path),
  (path: string, done: (error: NodeJS.ErrnoException | null, real: string) => void) =>
    realpathCallback.native(path, done),
);

/** What {@link readFileNoFollow} found. */
export interface FileBytes {
  /** The open file's status (fstat). */
  readonly stats: Stats;
  /**
   * The content: the whole file, or its first `maxBytes + 1` bytes when it has more; null when it
   * is not a regular file with a single name (nothing read).
   */
  readonly bytes: Buffer | null;
  /** The file, still open, when `keepOpen` was asked and bytes were read; the caller closes it. */
  readonly fd?: number;
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Open a file without following a symbolic link (and without blocking on a fifo), read its status
 * and, when it is a regular file with one name, its content up to `maxBytes + 1` bytes; close it.
 * One read call for a file whose size does not change meanwhile (a short read of a regular file
 * is its end); a file that grows is read on to its end or the cap.
 * @param path the file.
 * @param maxBytes the most bytes wanted; one more is read to tell "more than that".
 * @param keepOpen leave a file whose bytes were read open and hand back its descriptor.
 * @returns the status and bytes.
 * @throws the open, fstat, read or close error (ELOOP for a symbolic link, ENOENT…).
 */
export function readFileNoFollow(
  path: string,
  maxBytes: number,
  keepOpen = false,
): Promise<FileBytes> {
  const cap = maxBytes + 1;
  if (fast()) return readFileFast(path, cap, keepOpen);
  return tracked(
    new Promise<FileBytes>((resolve, reject) => {
      open(path, READ_FLAGS, (openError, fd) => {
        if (openError !== null) {
          reject(openError);
          return;
        }
        fstat(fd, (statError, stats) => {
          if (statError !== null) closeAndReject(fd, statError, reject);
          else if (!stats.isFile() || stats.nlink > 1)
            closeAndResolve(fd, { stats, bytes: null }, resolve, reject);
          else readToEnd(fd, stats, cap, keepOpen).then(resolve, reject);
        });
      });
    }),
  );
}

/** Files at least this large are read or written through the pool even on the fast path. */
const FAST_FILE_MAX_BYTES = 64 * 1024;

/**
 * {@link readFileNoFollow} on the fast path. Its errors are the pool path's: a promise, never a
 * throw; a failed fstat or read wins over a failed close after it, a failed close fails a read
 * that went well. A large note, or one that grew past {@link FAST_FILE_MAX_BYTES} while it was
 * read, is read again through the pool (its read may come from the disk).
 */
function readFileFast(path: string, cap: number, keepOpen: boolean): Promise<FileBytes> {
  const startedAt = performance.now();
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (error) {
    timed(startedAt);
    return Promise.reject(error as Error);
  }
  let found: FileBytes | undefined;
  let pooled: Promise<FileBytes> | undefined;
  let failure: Error | undefined;
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.nlink > 1) found = { stats, bytes: null };
    else {
      const bytes =
        stats.size < FAST_FILE_MAX_BYTES ? readToEndSync(fd, stats.size, cap) : undefined;
      if (bytes === undefined) pooled = readToEnd(fd, stats, cap, keepOpen);
      else found = keepOpen ? { stats, bytes, fd } : { stats, bytes };
    }
  } catch (error) {
    failure = error as Error;
  }
  if (pooled === undefined && found?.fd === undefined) {
    try {
      closeSync(fd);
    } catch (closeError) {
      failure ??= closeError as Error;
    }
  }
  timed(startedAt);
  if (pooled !== undefined) return tracked(pooled);
  if (failure !== undefined) return Promise.reject(failure);
  return Promise.resolve(found as FileBytes);
}

/**
 * A promise of a pool call, counted as out in the pool until it settles.
 * @param settled the call's promise.
 */
function tracked<T>(settled: Promise<T>): Promise<T> {
  outstanding += 1;
  return settled.finally(() => {
    outstanding -= 1;
  });
}

function closeAndReject(fd: number, error: Error, reject: (error: Error) => void): void {
  close(fd, () => reject(error));
}

function closeAndResolve(
  fd: number,
  value: FileBytes,
  resolve: (value: FileBytes) => void,
  reject: (error: Error) => void,
): void {
  close(fd, (closeError) => {
    if (closeError !== null) reject(closeError);
    else resolve(value);
  });
}

/**
 * Read an open regular file to its end or `cap` bytes through the pool; one read for a file whose
 * size does not change meanwhile (a short read of a regular file is its end). Closes the file
 * unless `keepOpen` (then its descriptor is handed back); closes it on an error.
 */
function readToEnd(fd: number, stats: Stats, cap: number, keepOpen: boolean): Promise<FileBytes> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.allocUnsafe(Math.min(stats.size + 1, cap));
    let length = 0;
    const more = (): void => {
      read(fd, buffer, length, buffer.length - length, length, (readError, bytesRead) => {
        if (readError !== null) {
          closeAndReject(fd, readError, reject);
          return;
        }
        length += bytesRead;
        if (readAll(bytesRead, length, buffer, cap)) {
          const bytes = buffer.subarray(0, length);
          if (keepOpen) resolve({ stats, bytes, fd });
          else closeAndResolve(fd, { stats, bytes }, resolve, reject);
          return;
        }
        buffer = grown(buffer, length, cap);
        more();
      });
    };
    more();
  });
}

/**
 * {@link readToEnd}, synchronously, leaving the file open; undefined once the buffer has reached
 * {@link FAST_FILE_MAX_BYTES} without the file's end (a file that grew while it was read: the
 * rest is not the main thread's to wait for).
 */
function readToEndSync(fd: number, size: number, cap: number): Buffer | undefined {
  let buffer = Buffer.allocUnsafe(Math.min(size + 1, cap));
  let length = 0;
  for (;;) {
    const bytesRead = readSync(fd, buffer, length, buffer.length - length, length);
    length += bytesRead;
    if (readAll(bytesRead, length, buffer, cap)) return buffer.subarray(0, length);
    if (buffer.length >= FAST_FILE_MAX_BYTES) return undefined;
    buffer = grown(buffer, length, cap);
  }
}

/**
 * Whether a read ended the file: a short read of a regular file is its end, and the cap is the
 * most wanted; a full buffer below the cap means the file grew.
 */
function readAll(bytesRead: number, length: number, buffer: Buffer, cap: number): boolean {
  return bytesRead === 0 || length < buffer.length || length >= cap;
}

/** A buffer twice as large (at most `cap`) holding the `length` bytes read so far. */
function grown(buffer: Buffer, length: number, cap: number): Buffer<ArrayBuffer> {
  const larger = Buffer.allocUnsafe(Math.min(buffer.length * 2, cap));
  buffer.copy(larger, 0, 0, length);
  return larger;
}

/** Options of {@link writeNewFile}. */
export interface NewFileOptions {
  /** Permission bits for the file (filtered by the umask at creation). */
  readonly mode: number;
  /** Set `mode` exactly with fchmod after the create (when the umask would strip bits of it). */
  readonly chmod: boolean;
}

/**
 * Create a file that must not exist yet (`O_EXCL`), write all of `data` and fsync it; resolves once
 * the fsync succeeded, and closes the file meanwhile (the close of a file whose data is on disk
 * has nothing left to report: a rename of it, say, need not wait for it, one thread-pool round
 * trip less on a note's way). On a failure before then the file is closed and removed.
 * @param path the new file.
 * @param data its content.
 * @param options mode and whether to chmod.
 * @throws the failing call's error.
 */
export function writeNewFile(path: string, data: Buffer, options: NewFileOptions): Promise<void> {
  if (data.length < FAST_FILE_MAX_BYTES && fast()) return writeNewFileFast(path, data, options);
  const settled = new Promise<void>((resolve, reject) => {
    open(path, NEW_FILE_FLAGS, options.mode, (openError, fd) => {
      if (openError !== null) {
        reject(openError);
        return;
      }
      let written = 0;
      const writeRest = (): void => {
        if (written >= data.length) {
          syncAndClose(path, fd, resolve, reject);
          return;
        }
        write(fd, data, written, data.length - written, null, (writeError, bytes) => {
          if (writeError !== null) {
            removeAndReject(path, fd, writeError, reject);
            return;
          }
          if (bytes === 0) {
            // A regular file takes at least one byte or fails; never loop on nothing.
            removeAndReject(path, fd, noProgress(path), reject);
            return;
          }
          written += bytes;
          writeRest();
        });
      };
      if (!options.chmod) {
        writeRest();
        return;
      }
      fchmod(fd, options.mode, (chmodError) => {
        if (chmodError !== null) removeAndReject(path, fd, chmodError, reject);
        else writeRest();
      });
    });
  });
  return tracked(settled);
}

const NEW_FILE_FLAGS =
  constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_TRUNC;

/**
 * {@link writeNewFile} on the fast path: the create and the write (into the page cache) made
 * synchronously, the fsync (which waits for the disk) through the pool.
 */
function writeNewFileFast(path: string, data: Buffer, options: NewFileOptions): Promise<void> {
  const startedAt = performance.now();
  let fd: number;
  try {
    fd = openSync(path, NEW_FILE_FLAGS, options.mode);
  } catch (error) {
    timed(startedAt);
    return Promise.reject(error as Error);
  }
  let failure: Error | undefined;
  try {
    if (options.chmod) fchmodSync(fd, options.mode);
    let written = 0;
    while (written < data.length) {
      const bytes = writeSync(fd, data, written, data.length - written);
      if (bytes === 0) throw noProgress(path);
      written += bytes;
    }
  } catch (error) {
    failure = error as Error;
  }
  timed(startedAt);
  const open = fd;
  return tracked(
    new Promise<void>((resolve, reject) => {
      if (failure !== undefined) removeAndReject(path, open, failure, reject);
      else syncAndClose(path, open, resolve, reject);
    }),
  );
}

/** fsync a new file, then resolve and close it meanwhile; on an error, remove it and reject. */
function syncAndClose(
  path: string,
  fd: number,
  resolve: () => void,
  reject: (error: Error) => void,
): void {
  fsync(fd, (syncError) => {
    if (syncError !== null) {
      removeAndReject(path, fd, syncError, reject);
      return;
    }
    closeQuietly(fd);
    resolve();
  });
}

/** Close and remove a new file that failed, then reject with the failure. */
function removeAndReject(
  path: string,
  fd: number,
  error: Error,
  reject: (error: Error) => void,
): void {
  close(fd, () => unlink(path, () => reject(error)));
}

function noProgress(path: string): Error {
  return Object.assign(new Error(`write ${path}: no progress`), { code: 'EIO' });
}

/**
 * Close a descriptor without waiting (a read-only file: nothing to flush, no error to act on).
 * @param fd the descriptor.
 */
export function closeQuietly(fd: number): void {
  close(fd, () => undefined);
}
