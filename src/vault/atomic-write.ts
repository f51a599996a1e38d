import { readFileSync } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { rename, writeNewFile } from './fs-calls.ts';
import { fsyncDirectory } from './fsync-dir.ts';
import { isVanished, toVaultIoError } from './fs-errors.ts';
import { fitName } from './file-names.ts';

/** Options of {@link writeFileAtomic}. */
export interface WriteFileAtomicOptions {
  /** fsync the folder after the rename so the new name survives a power loss; default true. */
  fsyncDir?: boolean;
  /** Permission bits to give the file, when the caller already knows them (saves a `stat`). */
  mode?: number;
}

// Unique per process and write; the pid keeps two processes apart (a crypto-random name cost
// measurable time per note for nothing).
let tempCounter = 0;

// The process's umask, read where it can be read without changing it (Linux); a note whose mode
// it would not change needs no chmod after the create.
const UMASK = ((): number | undefined => {
  try {
    const line = /^Umask:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return line === null ? undefined : Number.parseInt(line[1] as string, 8);
  } catch {
    return undefined;
  }
})();

/**
 * Replace a file's content atomically: readers see the old or the new text, never a mix. Writes a
 * temp file `.<name>.vaultd-<pid>-<n>.tmp` in the same folder (a dot file, so watchers ignore it),
 * fsyncs it, renames it over `path` and fsyncs the folder. An existing file keeps its permission
 * bits. The temp file is removed when anything fails.
 * @param path absolute path of the file to write.
 * @param data the full new content: a text, written as UTF-8, or its UTF-8 bytes.
 * @param options `fsyncDir` (default true).
 * @throws VaultIoError on any failure; `path` is then unchanged.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: WriteFileAtomicOptions = {},
): Promise<void> {
  const dir = dirname(path);
  // The note's name cut short when it is nearly as long as the file system takes.
  const temp = join(
    dir,
    fitName(`.${basename(path)}`, `.vaultd-${process.pid}-${(tempCounter++).toString(36)}.tmp`),
  );
  let mode = options.mode;
  if (mode === undefined) {
    try {
      mode = (await stat(path)).mode & 0o7777;
    } catch (error) {
      if (!isVanished(error)) throw toVaultIoError('stat', path, error);
    }
  }
  try {
    // The mode given to open() is filtered by the umask; the note's own bits must survive.
    const chmod = mode !== undefined && (UMASK === undefined || (mode & (UMASK | 0o7000)) !== 0);
    const bytes =
      typeof data === 'string'
        ? Buffer.from(data, 'utf8')
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    await writeNewFile(temp, bytes, { mode: mode ?? 0o666, chmod });
  } catch (error) {
    throw toVaultIoError('write', path, error);
  }
  try {
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw toVaultIoError('write', path, error);
  }
  if (options.fsyncDir ?? true) await fsyncDirectory(dir);
}
