import { readFileNoFollow } from '../vault/fs-calls.ts';

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
 * several hard links as `linked`, a file over `maxBytes` as `too_large` (looking for a call only in
 * its first `maxBytes`: enough to tell an agent's note from a stray large file, without reading
 * gigabytes) and a binary or non-UTF-8 file as such, without decoding it as text.
 * @param path absolute path of the note.
 * @param maxBytes size cap (config `max_note_bytes`).
 */
export async function readNote(path: string, maxBytes: number): Promise<NoteRead> {
  let file;
  try {
    file = await readFileNoFollow(path, maxBytes);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'gone' };
    // ELOOP: a symlink; ENXIO/EISDIR: a fifo or socket or folder wearing a .md name.
    if (code === 'ELOOP' || code === 'ENXIO' || code === 'EISDIR') return { kind: 'not_a_file' };
    throw error;
  }
  const { stats, bytes } = file;
  if (bytes === null) {
    return stats.isFile()
      ? { kind: 'linked', ino: stats.ino, nlink: stats.nlink }
      : { kind: 'not_a_file' };
  }
  if (bytes.length > maxBytes) {
    const mentionsToolCall = bytes.subarray(0, maxBytes).includes(MARKER);
    return { kind: 'too_large', size: Math.max(stats.size, bytes.length), mentionsToolCall };
  }
  if (bytes.includes(0)) return { kind: 'binary', mentionsToolCall: bytes.includes(MARKER) };
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return { kind: 'not_utf8', mentionsToolCall: bytes.includes(MARKER) };
  }
  return { kind: 'text', text, mtimeMs: stats.mtimeMs, size: bytes.length, ino: stats.ino };
}
