import { isUtf8 } from 'node:buffer';
import { link, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { errnoCode } from './fs-errors.ts';
import { isNoteFile } from './note-files.ts';
import { assertInsideVault } from './vault-writer.ts';

/**
 * List the notes (regular `.md` files, never symlinks) at the top level of a folder, by name
 * order; a missing folder has none.
 * @param dir absolute path of the folder.
 */
export async function listNotes(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return entries
    .filter((e) => e.isFile() && isNoteFile(e.name))
    .map((e) => join(dir, e.name))
    .sort();
}

/**
 * Move the notes of `dir` whose names are not valid UTF-8 to `failedDir`, unchanged and under
 * the same bytes (a number added when taken), and return their names as best shown. Such a name
 * has no string vaultd could read, claim or move the note by: Node.js lists it with replacement
 * characters, a name no file has, so the note stayed in the inbox, never run and never told why.
 * The move is a hard link, then an unlink: never over another file. A file system without hard
 * links, a `Failed/` that is a symbolic link or has one on its way, or any other failure, leaves
 * the note where it is (the caller logs it).
 * @param dir absolute path of the folder (the inbox).
 * @param failedDir absolute path of `Failed/`.
 * @param vault absolute path of the vault.
 */
export async function moveUnnamable(
  dir: string,
  failedDir: string,
  vault: string,
): Promise<{ moved: string[]; failed: { name: string; error: unknown }[] }> {
  const out = { moved: [] as string[], failed: [] as { name: string; error: unknown }[] };
  let checked: Promise<unknown> | undefined;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true, encoding: 'buffer' });
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return out;
    throw error;
  }
  const dirBytes = Buffer.from(`${dir}/`);
  const failedBytes = Buffer.from(`${failedDir}/`);
  for (const entry of entries) {
    const name = entry.name;
    if (isUtf8(name) || !entry.isFile()) continue;
    const shown = name.toString('utf8');
    if (!isNoteFile(shown)) continue;
    const src = Buffer.concat([dirBytes, name]);
    const stem = name.subarray(0, name.length - 3);
    try {
      // Checked once, and only when there is a note to move: the scan runs every few seconds.
      checked ??= assertInsideVault(vault, failedDir);
      await checked;
      for (let n = 0; ; n++) {
        const target =
          n === 0 ? name : Buffer.concat([stem, Buffer.from(`-${n}`), name.subarray(-3)]);
        try {
          await link(src, Buffer.concat([failedBytes, target]));
        } catch (error) {
          if (errnoCode(error) === 'EEXIST' && n < 1000) continue;
          throw error;
        }
        await unlink(src);
        out.moved.push(shown);
        break;
      }
    } catch (error) {
      out.failed.push({ name: shown, error });
    }
  }
  return out;
}
