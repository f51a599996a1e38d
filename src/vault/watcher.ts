import { watch, type FSWatcher } from 'chokidar';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { isNoteFile } from './note-files.ts';

/** A folder the watcher reports on, and the kind of work a note there means. */
export interface WatchedFolder {
  readonly path: string;
  readonly kind: FolderKind;
}

/** What a note's presence in a folder asks for (`in_progress`: resume after a stop). */
export type FolderKind = 'inbox' | 'pending' | 'approved' | 'rejected' | 'in_progress';

/** Options of {@link startWatcher}. */
export interface WatcherOptions {
  readonly folders: readonly WatchedFolder[];
  readonly logger: Logger;
  /** Called for every note that appeared or changed; must not throw. */
  readonly onNote: (path: string, kind: FolderKind) => void;
}

/** A running watcher: a hint only, the reconcile scan is the source of truth. */
export interface Watcher {
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Watch the inbox and decision folders (top level only, never the archives) with chokidar.
 * Events are hints: inotify drops them silently when its queue overflows, so the daemon also
 * runs a reconcile scan.
 * @param options the folders, a logger and the callback.
 */
export function startWatcher(options: WatcherOptions): Watcher {
  const kinds = new Map(options.folders.map((f) => [f.path, f.kind]));
  const watcher: FSWatcher = watch(
    options.folders.map((f) => f.path),
    {
      ignoreInitial: true,
      depth: 0,
      // Renames into the folder are the common case; chokidar's atomic mode would hold them back.
      atomic: false,
      ignored: (path, stats) => {
        if (kinds.has(path)) return false;
        if (stats?.isDirectory()) return true;
        return !isNoteFile(path) && basename(path).includes('.');
      },
    },
  );
  const report = (path: string): void => {
    if (!isNoteFile(path)) return;
    const kind = kinds.get(dirname(path));
    if (kind) options.onNote(path, kind);
  };
  watcher.on('add', report);
  watcher.on('change', report);
  watcher.on('error', (error) => options.logger.error({ err: error }, 'watcher error'));
  const ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return { ready, close: () => watcher.close() };
}
