import { open } from 'node:fs/promises';
import { errnoCode, toVaultIoError } from './fs-errors.ts';

// Some platforms and file systems cannot fsync a directory (Windows: EISDIR/EPERM; some network
// and FUSE file systems: EINVAL/ENOTSUP). There the rename is as durable as the system makes it.
const UNSUPPORTED = new Set(['EISDIR', 'EPERM', 'EINVAL', 'ENOTSUP', 'EBADF']);

/**
 * Flush a directory's entries (a rename or a new file in it) to stable storage.
 * @param dir absolute path of the directory.
 */
export async function fsyncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (error) {
    if (!UNSUPPORTED.has(errnoCode(error) ?? '')) throw toVaultIoError('fsync', dir, error);
  } finally {
    await handle?.close();
  }
}
