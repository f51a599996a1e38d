import type { Logger } from 'pino';
import type { CompiledPolicy, GrantStore } from '../approval/index.ts';
import type { Config } from '../config/types.ts';
import type { Executor } from '../execute/index.ts';
import type { EventBus } from '../observe/event-bus.ts';
import type { ExecutionLog } from '../observe/execution-log.ts';
import type { NoteWorker } from '../note/index.ts';
import type { ToolRegistry } from '../protocol/index.ts';
import type { Ledger, VaultLayout } from '../vault/index.ts';

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
  readonly policy: CompiledPolicy;
  readonly grants: GrantStore;
  /** Parses and edits notes, large ones off the main thread. */
  readonly notes: NoteWorker;
  /** Aborted when a shutdown's grace period runs out: running calls stop, notes stay claimed. */
  readonly shutdown: AbortSignal;
}
