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
  callKey,
  Ledger,
  LEDGER_FILE_NAME,
  type LedgerEntry,
  type LedgerIntent,
  type LedgerOptions,
} from './ledger.ts';
export { Journal, type JournalDamage, type OpenedJournal } from './journal.ts';
export {
  claimNote,
  claimedName,
  isClaimedByOther,
  readClaimedName,
  type ClaimName,
} from './claim.ts';
export {
  bootId,
  isProcessAlive,
  processStart,
  selfIdentity,
  type ProcessIdentity,
} from './process-identity.ts';
export { appendInVault, assertInsideVault, writeInVault } from './vault-writer.ts';
export {
  acquireLock,
  LOCK_FILE_NAME,
  LockError,
  readLock,
  type LockInfo,
  type VaultLock,
} from './lock.ts';
export {
  exists,
  moveClaimed,
  moveNoOverwrite,
  recoverInterruptedMove,
  suffixedName,
  type MoveOptions,
} from './move.ts';
export { isNoteFile } from './note-files.ts';
export { listNotes } from './scan.ts';
export {
  startWatcher,
  type FolderKind,
  type WatchedFolder,
  type Watcher,
  type WatcherOptions,
} from './watcher.ts';
