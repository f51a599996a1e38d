import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/**
 * Flags for opening a file to read that never wait: `O_NONBLOCK` makes opening a fifo (or a
 * device) return at once instead of holding a thread of libuv's pool until a writer comes. That
 * pool is the one every note's reads, writes and moves go through, and an agent with a shell (or
 * anyone with write access to a root) can make a fifo: four `read_file` calls of one would have
 * stopped the daemon's file work for good. A regular file reads the same with or without it.
 */
const READ_NOWAIT = constants.O_RDONLY | constants.O_NONBLOCK;

/** Thrown (as `code`) for a path that is not a regular file. */
const NOT_REGULAR = 'ENOTREG';
/** Thrown (as `code`, with `nlink`) for a file with other hard links, when asked to refuse them. */
export const LINKED = 'ELINKED';

/**
 * Open a path to read it, without waiting on a fifo, and refuse anything but a regular file.
 * @param path the file.
 * @param singleLink refuse a file with other hard links too (code `ELINKED`, with `nlink`).
 * @returns the open file and its size; the caller closes it.
 * @throws the open's error, or an error with code `ENOTREG` or `ELINKED`.
 */
async function openRegular(
  path: string,
  singleLink = false,
): Promise<{ handle: FileHandle; size: number }> {
  const handle = await open(path, READ_NOWAIT);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      throw Object.assign(new Error(`${path} is not a regular file`), {
        code: NOT_REGULAR,
        path,
      });
    }
    // Checked on the open file: a link made after a stat of the path cannot slip through.
    if (singleLink && stat.nlink > 1) {
      throw Object.assign(new Error(`${path} has other hard links`), {
        code: LINKED,
        nlink: stat.nlink,
        path,
      });
    }
    return { handle, size: stat.size };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/**
 * A regular file's content, read without waiting on a fifo.
 * @param path the file.
 * @param maxBytes refuse a larger file (code `EFBIG`).
 * @param options `singleLink`: refuse a file with other hard links (code `ELINKED`), which may
 *   be outside the roots; default false.
 * @throws as {@link openRegular}, or `EFBIG`.
 */
export async function readRegularFile(
  path: string,
  maxBytes = Infinity,
  options: { readonly singleLink?: boolean } = {},
): Promise<Buffer> {
  const { handle, size } = await openRegular(path, options.singleLink === true);
  try {
    if (size > maxBytes) {
      throw Object.assign(new Error(`${path} is ${size} bytes, over ${maxBytes}`), {
        code: 'EFBIG',
        path,
      });
    }
    const bytes = await readUpTo(handle, maxBytes, size);
    if (bytes === null) {
      throw Object.assign(new Error(`${path} grew past ${maxBytes} bytes while it was read`), {
        code: 'EFBIG',
        path,
      });
    }
    return bytes;
  } finally {
    await handle.close();
  }
}

/**
 * An open file's content from its start, read to its end but never past `maxBytes`: a file that
 * grows while it is read (a command still writing it) is not followed for ever, as
 * `FileHandle.readFile` follows it whatever size `stat` gave.
 * @param handle the open file.
 * @param maxBytes the most bytes taken.
 * @param sizeHint the size `stat` gave, for the first buffer.
 * @returns the bytes, or null when the file holds more than `maxBytes`.
 */
export async function readUpTo(
  handle: FileHandle,
  maxBytes: number,
  sizeHint = 0,
): Promise<Buffer | null> {
  // One byte more than wanted tells "more" from "exactly that much".
  const limit = maxBytes + 1;
  let buffer = Buffer.allocUnsafe(Math.max(1, Math.min(sizeHint + 1, limit, 64 * 1024 * 1024)));
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (buffer.length >= limit) break;
      const grown = Buffer.allocUnsafe(Math.min(buffer.length * 2, limit));
      buffer.copy(grown, 0, 0, length);
      buffer = grown;
    }
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  return length > maxBytes ? null : buffer.subarray(0, length);
}

/**
 * The SHA-256 of a regular file's content, read in pieces (a file of any size costs 64 KiB of
 * memory) and without waiting on a fifo.
 * @param path the file.
 * @throws as {@link openRegular}.
 */
export async function hashRegularFile(path: string): Promise<string> {
  const { handle } = await openRegular(path);
  try {
    const hash = createHash('sha256');
    const buffer = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}
