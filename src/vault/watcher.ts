import { watch, type FSWatcher } from 'chokidar';
import { watch as watchFolder, type FSWatcher as FolderWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
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
  /**
   * Called for every note that appeared (`rename`: created or moved in) or changed in place
   * (`change`); must not throw.
   */
  readonly onNote: (path: string, kind: FolderKind, event: 'rename' | 'change') => void;
}

/** A running watcher: a hint only, the reconcile scan is the source of truth. */
export interface Watcher {
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Watch the inbox and decision folders (top level only, never the archives). Events are hints:
 * inotify drops them silently when its queue overflows, so the daemon also runs a reconcile scan,
 * and every event is checked against the file itself.
 *
 * The decision folders, where humans move and edit a few notes, are watched with chokidar. The
 * inbox, where agents drop notes by the thousand, is watched with `fs.watch` (the inotify watch
 * chokidar itself sits on): chokidar answers every change of a folder by listing it again with an
 * `lstat` per file, which took 12–20 % of the daemon's time while it drained a backlog
 * (bench/README.md), whereas one inotify event costs one queue entry.
 * @param options the folders, a logger and the callback.
 */
export function startWatcher(options: WatcherOptions): Watcher {
  const inboxes = options.folders.filter((f) => f.kind === 'inbox');
  const others = options.folders.filter((f) => f.kind !== 'inbox');
  const raw: FolderWatcher[] = inboxes.map((folder) => watchInbox(folder, options));

  const kinds = new Map(others.map((f) => [f.path, f.kind]));
  let chokidar: FSWatcher | undefined;
  let ready = Promise.resolve();
  if (others.length > 0) {
    const watcher = watch(
      others.map((f) => f.path),
      {
        ignoreInitial: true,
        depth: 0,
        // A note moved into the folder is the common case; chokidar's atomic mode would hold it back.
        atomic: false,
        ignored: (path, stats) => {
          if (kinds.has(path)) return false;
          if (stats?.isDirectory()) return true;
          return !isNoteFile(path) && basename(path).includes('.');
        },
      },
    );
    const report = (path: string, event: 'rename' | 'change'): void => {
      if (!isNoteFile(path)) return;
      const kind = kinds.get(dirname(path));
      if (kind) options.onNote(path, kind, event);
    };
    watcher.on('add', (path) => report(path, 'rename'));
    watcher.on('change', (path) => report(path, 'change'));
    watcher.on('error', (error) => options.logger.error({ err: error }, 'watcher error'));
    ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    chokidar = watcher;
  }
  return {
    ready,
    async close() {
      for (const w of raw) w.close();
      await chokidar?.close();
    },
  };
}

function watchInbox(folder: WatchedFolder, options: WatcherOptions): FolderWatcher {
  const watcher = watchFolder(folder.path, { persistent: true }, (event, name) => {
    if (typeof name === 'string' && isNoteFile(name))
      options.onNote(
        join(folder.path, name),
        folder.kind,
        event === 'change' ? 'change' : 'rename',
      );
  });
  watcher.on('error', (error) =>
    options.logger.error(
      { err: error, folder: folder.path },
      'inbox watch failed; the reconcile scan still runs',
    ),
  );
  return watcher;
}
