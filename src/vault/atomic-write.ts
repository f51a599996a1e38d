import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { rename, writeNewFile } from './fs-calls.ts';
import { fsyncDirectory } from './fsync-dir.ts';
import { errnoCode, isVanished, toVaultIoError } from './fs-errors.ts';
import { fitName } from './file-names.ts';

/** Options of {@link writeFileAtomic}. */
export interface WriteFileAtomicOptions {
  /** fsync the folder after the rename so the new name survives a power loss; default true. */
  fsyncDir?: boolean;
  /** Permission bits to give the file, when the caller already knows them (saves a `stat`). */
  mode?: number;
  /**
   * Called with the temp file's path once it is written and flushed, before the rename: a caller
   * may open it there, to hold the file that will be at `path` (a journal appending to it).
   */
  beforeRename?: (temp: string) => Promise<void>;
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

/** How many other names a temp file is tried under when its name is taken. */
const TEMP_ATTEMPTS = 8;

/**
 * The temp file's path for a write of `path`: `.<name>.vaultd-<pid>-<n>.tmp`, with random letters
 * after the first try (a name someone could guess is taken); the note's name cut short when it
 * is nearly as long as the file system takes.
 */
function tempPath(path: string, attempt: number): string {
  const unique = `${process.pid}-${(tempCounter++).toString(36)}`;
  const guessless = attempt === 0 ? '' : `-${randomBytes(6).toString('hex')}`;
  return join(dirname(path), fitName(`.${basename(path)}`, `.vaultd-${unique}${guessless}.tmp`));
}

/**
 * Replace a file's content atomically: readers see the old or the new text, never a mix. Writes a
 * temp file `.<name>.vaultd-<pid>-<n>.tmp` in the same folder (a dot file, so watchers ignore it),
 * fsyncs it, renames it over `path` and fsyncs the folder. An existing file keeps its permission
 * bits. The temp file is removed when anything fails; a temp name already taken is tried again
 * under another.
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
  let mode = options.mode;
  if (mode === undefined) {
    try {
      mode = (await stat(path)).mode & 0o7777;
    } catch (error) {
      if (!isVanished(error)) throw toVaultIoError('stat', path, error);
    }
  }
  // The mode given to open() is filtered by the umask; the note's own bits must survive.
  const chmod = mode !== undefined && (UMASK === undefined || (mode & (UMASK | 0o7000)) !== 0);
  const bytes =
    typeof data === 'string'
      ? Buffer.from(data, 'utf8')
      : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let temp: string;
  for (let attempt = 0; ; attempt++) {
    temp = tempPath(path, attempt);
    try {
      await writeNewFile(temp, bytes, { mode: mode ?? 0o666, chmod });
      break;
    } catch (error) {
      // A file already under that name (left by an earlier process with the same pid, or put
      // there by an agent that guessed it): another name, never a failed write.
      if (errnoCode(error) === 'EEXIST' && attempt < TEMP_ATTEMPTS) continue;
      throw toVaultIoError('write', path, error);
    }
  }
  try {
    await options.beforeRename?.(temp);
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw toVaultIoError('write', path, error);
  }
  if (options.fsyncDir ?? true) await fsyncDirectory(dir);
}
