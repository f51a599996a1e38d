import { createHash } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';

/**
 * Which folder a path leads to now, as a SHA-256 of its real path, device and inode: a folder
 * replaced by another (a rename over it), moved away, or swapped for a link gives another value.
 * @param path an absolute path, followed through links.
 * @returns the hash, or null when nothing is there; a value no hash equals when it is no folder
 *   or cannot be read.
 */
export async function folderIdentity(path: string): Promise<string | null> {
  try {
    const real = await realpath(path);
    const info = await stat(real, { bigint: true });
    if (!info.isDirectory()) return 'not-a-folder';
    return createHash('sha256')
      .update(`${real}\0${String(info.dev)}\0${String(info.ino)}`)
      .digest('hex');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    return `unreadable:${code ?? 'error'}`;
  }
}
