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
export const READ_NOWAIT = constants.O_RDONLY | constants.O_NONBLOCK;

/** Thrown (as `code`) for a path that is not a regular file. */
export const NOT_REGULAR = 'ENOTREG';

/**
 * Open a path to read it, without waiting on a fifo, and refuse anything but a regular file.
 * @param path the file.
 * @param noFollow refuse a symbolic link at the last component (`ELOOP`).
 * @returns the open file and its size; the caller closes it.
 * @throws the open's error, or an error with code {@link NOT_REGULAR}.
 */
export async function openRegular(
  path: string,
  noFollow = false,
): Promise<{ handle: FileHandle; size: number }> {
  const handle = await open(path, READ_NOWAIT | (noFollow ? constants.O_NOFOLLOW : 0));
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      throw Object.assign(new Error(`${path} is not a regular file`), {
        code: NOT_REGULAR,
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
 * @throws as {@link openRegular}, or `EFBIG`.
 */
export async function readRegularFile(path: string, maxBytes = Infinity): Promise<Buffer> {
  const { handle, size } = await openRegular(path);
  try {
    if (size > maxBytes) {
      throw Object.assign(new Error(`${path} is ${size} bytes, over ${maxBytes}`), {
        code: 'EFBIG',
        path,
      });
    }
    return await handle.readFile();
  } finally {
    await handle.close();
  }
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
