import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isNoteFile } from './note-files.ts';

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
