import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** What reading a note gave. */
export type NoteRead =
  | {
      readonly kind: 'text';
      readonly text: string;
      readonly mtimeMs: number;
      readonly size: number;
      readonly ino: number;
    }
  | { readonly kind: 'too_large'; readonly size: number; readonly mentionsToolCall: boolean }
  | { readonly kind: 'binary' | 'not_utf8'; readonly mentionsToolCall: boolean }
  | { readonly kind: 'not_a_file' }
  /** A regular file with several names (hard links): writing into it could change another file. */
  | { readonly kind: 'linked'; readonly ino: number; readonly nlink: number }
  | { readonly kind: 'gone' };

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const MARKER = Buffer.from('tool_call');

/**
 * Read a note safely: never follows a symlink, reports a vanished file as `gone`, a file with
 * several hard links as `linked`, a file over `maxBytes` as `too_large` and a binary or non-UTF-8
 * file as such, without decoding it as text.
 * @param path absolute path of the note.
 * @param maxBytes size cap (config `max_note_bytes`).
 */
export async function readNote(path: string, maxBytes: number): Promise<NoteRead> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'gone' };
    // ELOOP: a symlink; ENXIO/EISDIR: a fifo or socket or folder wearing a .md name.
    if (code === 'ELOOP' || code === 'ENXIO' || code === 'EISDIR') return { kind: 'not_a_file' };
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { kind: 'not_a_file' };
    if (stats.nlink > 1) return { kind: 'linked', ino: stats.ino, nlink: stats.nlink };
    if (stats.size > maxBytes) {
      // Look for a call only within the first maxBytes: enough to tell an agent's note from a
      // stray large file, without reading gigabytes.
      const head = Buffer.alloc(maxBytes);
      const { bytesRead } = await handle.read(head, 0, maxBytes, 0);
      const mentionsToolCall = head.subarray(0, bytesRead).includes(MARKER);
      return { kind: 'too_large', size: stats.size, mentionsToolCall };
    }
    const buffer = await readAll(handle, stats.size);
    if (buffer.length > maxBytes) {
      return { kind: 'too_large', size: buffer.length, mentionsToolCall: buffer.includes(MARKER) };
    }
    if (buffer.includes(0)) return { kind: 'binary', mentionsToolCall: buffer.includes(MARKER) };
    let text: string;
    try {
      text = decoder.decode(buffer);
    } catch {
      return { kind: 'not_utf8', mentionsToolCall: buffer.includes(MARKER) };
    }
    return { kind: 'text', text, mtimeMs: stats.mtimeMs, size: buffer.length, ino: stats.ino };
  } finally {
    await handle.close();
  }
}

/**
 * The whole file: one read of one byte more than its size just told (a short read of a regular
 * file is its end), so a note costs one read call, not FileHandle.readFile's stat and reads; a file
 * that grew since is read to its end.
 */
async function readAll(handle: FileHandle, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size + 1);
  const { bytesRead } = await handle.read(buffer, 0, size + 1, 0);
  if (bytesRead <= size) return buffer.subarray(0, bytesRead);
  // Positional reads leave the file position at 0: this reads the whole file again.
  return handle.readFile();
}
