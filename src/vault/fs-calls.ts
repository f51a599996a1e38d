import {
  close,
  constants,
  fchmod,
  fstat,
  fsync,
  lstat as lstatCallback,
  open,
  read,
  realpath as realpathCallback,
  rename as renameCallback,
  unlink,
  write,
  type Stats,
} from 'node:fs';
import { promisify } from 'node:util';

// The file-system calls of a note's path through the daemon (read, claim, write back, move), on
// Node's callback API. `fs/promises` does the same system calls, but each goes through a
// FileHandle and its promise machinery: measured on this project's bench machine, reading a 1 KB
// note (open, fstat, read, close) cost about 65 µs of main-thread time through a FileHandle and
// 37 µs as one callback chain, and a single lstat or rename about 20 and 15 µs, so these calls
// cost the main thread roughly half of what they did (bench/README.md, item 17). Everything else
// keeps `fs/promises`. Errors are the same Node errors (code, syscall, path).

/** `lstat`, as `fs/promises` has it. */
export const lstat: (path: string) => Promise<Stats> = promisify(lstatCallback);
/** `rename`, as `fs/promises` has it. */
export const rename: (from: string, to: string) => Promise<void> = promisify(renameCallback);
/** The system's `realpath(3)`, as `fs/promises.realpath` (not the JavaScript `fs.realpath`). */
export const realpath: (path: string) => Promise<string> = promisify(realpathCallback.native);

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
  return new Promise((resolve, reject) => {
    open(path, READ_FLAGS, (openError, fd) => {
      if (openError !== null) {
        reject(openError);
        return;
      }
      const done = (error: Error | null, value?: FileBytes): void => {
        close(fd, (closeError) => {
          if (error !== null) reject(error);
          else if (closeError !== null) reject(closeError);
          else resolve(value as FileBytes);
        });
      };
      fstat(fd, (statError, stats) => {
        if (statError !== null) {
          done(statError);
          return;
        }
        if (!stats.isFile() || stats.nlink > 1) {
          done(null, { stats, bytes: null });
          return;
        }
        const cap = maxBytes + 1;
        let buffer = Buffer.allocUnsafe(Math.min(stats.size + 1, cap));
        let length = 0;
        const more = (): void => {
          read(fd, buffer, length, buffer.length - length, length, (readError, bytesRead) => {
            if (readError !== null) {
              done(readError);
              return;
            }
            length += bytesRead;
            // A short read is the end; a full buffer below the cap means the file grew.
            if (bytesRead === 0 || length < buffer.length || length >= cap) {
              const bytes = buffer.subarray(0, length);
              if (keepOpen) resolve({ stats, bytes, fd });
              else done(null, { stats, bytes });
              return;
            }
            const grown = Buffer.allocUnsafe(Math.min(buffer.length * 2, cap));
            buffer.copy(grown, 0, 0, length);
            buffer = grown;
            more();
          });
        };
        more();
      });
    });
  });
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
  return new Promise((resolve, reject) => {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_TRUNC;
    open(path, flags, options.mode, (openError, fd) => {
      if (openError !== null) {
        reject(openError);
        return;
      }
      const fail = (error: Error): void => {
        close(fd, () => unlink(path, () => reject(error)));
      };
      let written = 0;
      const writeRest = (): void => {
        if (written >= data.length) {
          fsync(fd, (syncError) => {
            if (syncError !== null) {
              fail(syncError);
              return;
            }
            closeQuietly(fd);
            resolve();
          });
          return;
        }
        write(fd, data, written, data.length - written, null, (writeError, bytes) => {
          if (writeError !== null) {
            fail(writeError);
            return;
          }
          if (bytes === 0) {
            // A regular file takes at least one byte or fails; never loop on nothing.
            fail(Object.assign(new Error(`write ${path}: no progress`), { code: 'EIO' }));
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
        if (chmodError !== null) fail(chmodError);
        else writeRest();
      });
    });
  });
}

/**
 * Close a descriptor without waiting (a read-only file: nothing to flush, no error to act on).
 * @param fd the descriptor.
 */
export function closeQuietly(fd: number): void {
  close(fd, () => undefined);
}
