export { writeFileAtomic, type WriteFileAtomicOptions } from './atomic-write.ts';
export {
  errnoCode,
  ignoreVanished,
  isVanished,
  toVaultIoError,
  VaultIoError,
} from './fs-errors.ts';
export { fsyncDirectory } from './fsync-dir.ts';
export {
  ensureLayout,
  resolveLayout,
  STATE_DIR_NAME,
  toVaultPath,
  type VaultLayout,
} from './layout.ts';
export {
  Ledger,
  LEDGER_FILE_NAME,
  type LedgerCall,
  type LedgerIntent,
  type LedgerOptions,
} from './ledger.ts';
export {
  acquireLock,
  LOCK_FILE_NAME,
  LockError,
  readLock,
  type LockInfo,
  type VaultLock,
} from './lock.ts';
export { claimNote, moveNoOverwrite, suffixedName, type MoveOptions } from './move.ts';
// The lead adds the watcher, scan and queue exports below.
export { isNoteFile } from './note-files.ts';
export { listNotes } from './scan.ts';
export {
  startWatcher,
  type FolderKind,
  type WatchedFolder,
  type Watcher,
  type WatcherOptions,
} from './watcher.ts';
