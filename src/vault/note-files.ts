import { basename } from 'node:path';

// Editors and sync tools leave these next to notes while they write: Vim swap/backup files,
// Emacs lock and autosave files, our own and other tools' temp files, Syncthing/Dropbox partials.
const TEMP_PATTERNS: readonly RegExp[] = [
  /^\./, // dot files, including our `.name.vaultd-*.tmp` and `.#emacs-lock`
  /~$/,
  /^#.*#$/,
  /\.(swp|swo|swx|tmp|temp|part|crdownload|sync-conflict.*)$/i,
];

/**
 * True when `path` names a note vaultd should look at: a `.md` file that is not a dot file or an
 * editor's temp file.
 * @param path absolute or relative path of the file.
 */
export function isNoteFile(path: string): boolean {
  const name = basename(path);
  if (!name.toLowerCase().endsWith('.md')) return false;
  return !TEMP_PATTERNS.some((pattern) => pattern.test(name));
}
