import type { FoundCall } from '../note/types.ts';
import type { ToolResult } from '../protocol/types.ts';
import type { LedgerEntry } from '../vault/index.ts';
import type { PipelineContext } from './context.ts';
import { makePipelineResult } from './make-result.ts';

/**
 * The result to write for a call with side effects that already ran (a re-saved or copied note,
 * a note moved back): the recorded result marked as a replay, or, once the ledger kept only the
 * outcome, a short result saying when and where it ran. The call is never run again.
 * @param ctx the pipeline context.
 * @param key the call's ledger key.
 * @param history its ledger entry (finished).
 * @param found the call in this note.
 */
export async function replayResult(
  ctx: PipelineContext,
  key: string,
  history: LedgerEntry,
  found: Pick<FoundCall, 'id' | 'name'>,
): Promise<ToolResult> {
  const where = history.writtenTo ?? history.note;
  const recorded = await ctx.ledger.result(key);
  if (isResult(recorded) && recorded.id === found.id) {
    return {
      ...recorded,
      metadata: {
        ...recorded.metadata,
        replay: { note: where, finished_at: recorded.metadata.finished_at },
      },
    };
  }
  const at = new Date(history.intentAt).toISOString();
  const message = `this call already ran at ${at} (its result went to ${where}) with status ${history.status ?? 'unknown'}; it was not run again. To run it again, write it as a new call with a new id.`;
  if (history.status === 'success') {
    const base = makePipelineResult({
      id: found.id,
      name: found.name,
      status: 'error',
      code: 'EXECUTION_FAILED',
      message,
    });
    return {
      ...base,
      success: true,
      status: 'success',
      content: message,
      error: null,
      metadata: { ...base.metadata, replay: { note: where, finished_at: null } },
    };
  }
  const failed = makePipelineResult({
    id: found.id,
    name: found.name,
    status: history.status === 'interrupted' ? 'interrupted' : 'error',
    code: history.status === 'interrupted' ? 'INTERRUPTED' : 'EXECUTION_FAILED',
    message,
  });
  return {
    ...failed,
    metadata: { ...failed.metadata, replay: { note: where, finished_at: null } },
  };
}

function isResult(value: unknown): value is ToolResult {
  if (value === null || typeof value !== 'object') return false;
  const r = value as Partial<ToolResult>;
  return (
    typeof r.id === 'string' &&
    typeof r.name === 'string' &&
    typeof r.status === 'string' &&
    typeof r.content === 'string' &&
    typeof r.metadata === 'object'
  );
}
