import type { Logger } from 'pino';
import type { ApprovalGate } from '../approval/index.ts';
import type { Config } from '../config/types.ts';
import type { Executor } from '../execute/index.ts';
import type { EventBus } from '../observe/event-bus.ts';
import type { ExecutionLog } from '../observe/execution-log.ts';
import type { NoteWorker } from '../note/index.ts';
import type { ToolRegistry } from '../protocol/index.ts';
import type { Ledger, VaultLayout } from '../vault/index.ts';
import type { Redactor } from '../observe/redact.ts';
import type { FileStamp } from './read-note.ts';
import type { CallBudget } from './call-budget.ts';
import type { Conditions } from './conditions.ts';
import type { FolderKind } from '../vault/watcher.ts';

/** Everything a pipeline stage needs, built once by the daemon. */
export interface PipelineContext {
  readonly config: Config;
  readonly layout: VaultLayout;
  readonly registry: ToolRegistry;
  readonly executor: Executor;
  readonly ledger: Ledger;
  readonly executionLog: ExecutionLog;
  readonly logger: Logger;
  readonly bus: EventBus;
  /** Policy, grants and approval requests: the one gate every call passes. */
  readonly gate: ApprovalGate;
  /** Parses and edits notes, large ones off the main thread. */
  readonly notes: NoteWorker;
  /** Aborted when a shutdown's grace period runs out: running calls stop, notes stay claimed. */
  readonly shutdown: AbortSignal;
  /**
   * Notes that waited in `In_Progress/` at start while the ledger was missing or damaged: their
   * calls with side effects have a history vaultd cannot read, so a human decides them.
   */
  readonly untrustedNotes: ReadonlySet<string>;
  /** Removes every secret the config holds from a text or value (results, previews, messages). */
  readonly redact: Redactor;
  /** Infrastructure conditions (disk full, permissions) being worked around. */
  readonly conditions: Conditions;
  /** Absolute paths of the claimed notes being worked on now. */
  readonly active: Set<string>;
  /**
   * Queue a note to be looked at (the daemon's note queue): a note whose request was decided
   * while it was claimed, once it is back in `Pending_Approval/`. Absent, nothing is queued.
   */
  readonly requeue?: (path: string, kind: FolderKind) => void;
  /** Infrastructure failures in a row, by note path, for the backoff. */
  readonly deferrals: Map<string, number>;
  /**
   * Pending notes last seen with nothing to decide, by path: looked at again only once the file,
   * the approval requests or the clock (an expiry) changed (see process-note.ts). Optional: made
   * on first use.
   */
  quietPending?: Map<string, QuietPending>;
  /**
   * The Approval-section problems last written into each pending note, by path, so that each set
   * is answered once (see process-note.ts). Optional: made on first use.
   */
  answeredProblems?: Map<string, string>;
  /** Whether a note that hit an infrastructure failure is tried again (false for `vaultd once`). */
  readonly retryDeferred: boolean;
  /** The calls the notes being worked on may hold at once (see call-budget.ts). */
  readonly callBudget: CallBudget;
}

/** A pending note seen with nothing to decide: the file as it was, and until when that holds. */
export interface QuietPending extends FileStamp {
  /** The approval requests' version then (any request made, decided, moved or expired since). */
  readonly requestsVersion: number;
  /** The earliest expiry of its pending requests, in ms since the epoch. */
  readonly until: number;
}
