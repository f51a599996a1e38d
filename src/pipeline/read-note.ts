import type { FolderKind } from '../vault/watcher.ts';
import type { Stats } from 'node:fs';
import { closeQuietly, lstat, readFileNoFollow } from '../vault/fs-calls.ts';

/** A note read as text. */
export interface TextRead {
  readonly kind: 'text';
  readonly text: string;
  readonly mtimeMs: number;
  readonly size: number;
  readonly ino: number;
  readonly dev: number;
  /** The file, kept open when asked ({@link readNote}'s `hold`), until {@link releaseNote}. */
  readonly held?: HeldFile;
}

/** A note's file kept open after reading it: while it is open, its inode is never reused. */
export interface HeldFile {
  readonly fd: number;
  /** Set once the descriptor is closed. */
  closed: boolean;
}

/** What reading a note gave. */
export type NoteRead =
  | TextRead
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
export async function readNote(path: string, maxBytes: number, hold = false): Promise<NoteRead> {
  let file;
  try {
    file = await readFileNoFollow(path, maxBytes, hold);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'gone' };
    // ELOOP: a symlink; ENXIO/EISDIR: a fifo or socket or folder wearing a .md name.
    if (code === 'ELOOP' || code === 'ENXIO' || code === 'EISDIR') return { kind: 'not_a_file' };
    throw error;
  }
  const { stats, bytes, fd } = file;
  const read = classify(stats, bytes, maxBytes);
  if (fd === undefined) return read;
  if (read.kind !== 'text') {
    closeQuietly(fd);
    return read;
  }
  return { ...read, held: { fd, closed: false } };
}

/**
 * The size cap of a note outside the inbox: twice `max_note_bytes`. The cap is for what agents
 * drop into the inbox; a note in a decision folder or `In_Progress/` also holds the results
 * vaultd wrote into it, which can take it past `max_note_bytes` (a human's decision on such a note
 * used to be ignored without a word).
 * @param maxNoteBytes config `max_note_bytes`.
 */
export function writtenNoteCap(maxNoteBytes: number): number {
  return maxNoteBytes * 2;
}

/**
 * The size cap of a note read from a folder: `max_note_bytes` in the inbox, {@link writtenNoteCap}
 * anywhere else.
 * @param maxNoteBytes config `max_note_bytes`.
 * @param kind the folder.
 */
export function noteCap(maxNoteBytes: number, kind: FolderKind): number {
  return kind === 'inbox' ? maxNoteBytes : writtenNoteCap(maxNoteBytes);
}

/**
 * Close the file {@link readNote} kept open, if it did and it is still open.
 * @param read what readNote gave.
 */
export function releaseNote(read: NoteRead): void {
  if (read.kind !== 'text' || read.held === undefined || read.held.closed) return;
  read.held.closed = true;
  closeQuietly(read.held.fd);
}

/**
 * Whether the file at `path` now is the very file `read` read, unchanged: the same inode on the
 * same device (which cannot have been freed and reused while `read` holds it open), still a
 * regular file with one name, with the same size and modification time. This is how a claim is
 * checked: the rename moved whatever was at the note's name, maybe another file put there after
 * the read. A change the time stamp cannot show (same size, within its tick) is an edit made while
 * the note is being processed, which the write-back handles as any other.
 * @param read a text read made with `hold`.
 * @param path where the file should be now.
 * @returns false when it is not (or `read` holds no file): read it again.
 */
export async function isSameNote(read: TextRead, path: string): Promise<boolean> {
  const held = read.held;
  if (held === undefined || held.closed) return false;
  let now;
  try {
    now = await lstat(path);
  } catch {
    return false;
  }
  return sameFile(now, read) && now.nlink === 1;
}

/** What a later `lstat` of a note compares with to tell it is the same file, unchanged. */
export type FileStamp = Pick<TextRead, 'dev' | 'ino' | 'size' | 'mtimeMs'>;

/**
 * Whether an `lstat` shows the file of `stamp`, unchanged: a regular file of that device, inode,
 * size and modification time.
 * @param now the `lstat` result.
 * @param stamp the file as it was read.
 */
export function sameFile(now: Stats, stamp: FileStamp): boolean {
  return (
    now.isFile() &&
    now.ino === stamp.ino &&
    now.dev === stamp.dev &&
    now.size === stamp.size &&
    now.mtimeMs === stamp.mtimeMs
  );
}

function classify(stats: Stats, bytes: Buffer | null, maxBytes: number): NoteRead {
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
  return {
    kind: 'text',
    text,
    mtimeMs: stats.mtimeMs,
    size: bytes.length,
    ino: stats.ino,
    dev: stats.dev,
  };
}
