import { relative } from 'node:path';
import type { PipelineContext } from './context.ts';

/** The vault-relative path of a note, as the ledger, logs and events name it. */
export function noteKey(ctx: PipelineContext, path: string): string {
  const root = ctx.layout.root;
  // The paths vaultd makes are normalised and inside the root: cut the prefix (path.relative
  // resolves both paths on every call, and a note's key is asked for a dozen times).
  if (
    path.length > root.length + 1 &&
    path.startsWith(root) &&
    path.charCodeAt(root.length) === 47 &&
    !/\/\.{0,2}(?:\/|$)/.test(path.slice(root.length))
  ) {
    return path.slice(root.length + 1);
  }
  return relative(root, path).split('\\').join('/');
}
