import { relative } from 'node:path';
import type { PipelineContext } from './context.ts';

/** The vault-relative path of a note, as the ledger, logs and events name it. */
export function noteKey(ctx: PipelineContext, path: string): string {
  return relative(ctx.layout.root, path).split('\\').join('/');
}
