import { basename } from 'node:path';
import { effectsOf } from '../protocol/effects.ts';
import { hashArguments } from '../protocol/hash-arguments.ts';
import type { FoundCall } from '../note/types.ts';
import { callKey } from '../vault/index.ts';
import type { PipelineContext } from './context.ts';
import { noteKey } from './note-key.ts';
import { readNote, writtenNoteCap } from './read-note.ts';

/**
 * After a kill cut the final move short (the note got its results and reached its folder, but the
 * ledger never heard): record that the results of the note's calls with side effects are in it.
 * @param ctx the pipeline context.
 * @param path absolute path of the note in its final folder.
 */
export async function markNoteWritten(ctx: PipelineContext, path: string): Promise<void> {
  const read = await readNote(path, writtenNoteCap(ctx.config.max_note_bytes));
  if (read.kind !== 'text') return;
  const parsed = await ctx.notes.parse(read.text);
  const keys = await ledgerKeysOf(ctx, parsed.calls, basename(path));
  if (keys.length > 0) await ctx.ledger.markWritten(keys, noteKey(ctx, path));
}

/**
 * The ledger keys of calls with side effects that the ledger has an entry for.
 * @param ctx the pipeline context.
 * @param calls the calls, of a note of that name.
 * @param name the note's original file name (derived ids are keyed by it).
 */
export async function ledgerKeysOf(
  ctx: PipelineContext,
  calls: readonly FoundCall[],
  name: string,
): Promise<string[]> {
  const keys: string[] = [];
  for (const call of calls) {
    const checked = ctx.executor.check({ id: call.id, name: call.name, arguments: call.arguments });
    if (!checked.ok) continue;
    const facts = await ctx.executor.facts(checked.tool);
    if ((await effectsOf(checked.tool, checked.args, facts)).readOnly) continue;
    const key = callKey(
      { id: call.id, explicitId: call.explicitId, argsHash: hashArguments(checked.args) },
      name,
    );
    if (ctx.ledger.lookup(key) !== undefined) keys.push(key);
  }
  return keys;
}
