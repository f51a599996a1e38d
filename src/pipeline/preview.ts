import type { Preview, PreviewBasis, Tool } from '../protocol/types.ts';
import { hashRegularFile } from '../vault/read-regular.ts';
import { folderIdentity } from '../vault/folder-identity.ts';
import type { PipelineContext } from './context.ts';

/** How long a tool's preview may take before the call is shown without one. */
const PREVIEW_DEADLINE_MS = 5_000;
// C0 controls but tab, line feed and carriage return; DEL and C1 controls.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
/** A preview longer than this is cut (the whole call is still in the json block). */
const PREVIEW_MAX_CHARS = 20_000;

/**
 * What a call would do, for the human who decides it: the tool's `preview` of the normalised
 * arguments (a text or a unified diff, with the files it was made from), bounded in size, or
 * undefined when the tool has none, it failed or it took longer than 5 s (it is aborted then).
 * @param ctx the pipeline context.
 * @param tool the call's tool.
 * @param args the normalised arguments.
 */
export async function makePreview(
  ctx: PipelineContext,
  tool: Tool,
  args: Readonly<Record<string, unknown>>,
): Promise<Preview | undefined> {
  if (tool.preview === undefined) return undefined;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  try {
    const facts = await ctx.executor.facts(tool);
    const made = Promise.resolve(
      tool.preview(args as Record<string, unknown>, {
        config: facts.config,
        vault: ctx.layout.root,
        files: facts.files,
        signal: controller.signal,
      }),
    );
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => {
        controller.abort();
        resolve(undefined);
      }, PREVIEW_DEADLINE_MS);
    });
    const preview = await Promise.race([made, late]);
    if (preview === undefined) {
      if (controller.signal.aborted) ctx.logger.warn({ tool: tool.name }, 'preview took too long');
      return undefined;
    }
    const given: Preview = typeof preview === 'string' ? { kind: 'text', text: preview } : preview;
    // Control characters are shown, never written: a NUL would turn the note into a binary file.
    let text = ctx
      .redact(String(given.text))
      .replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    if (text.length > PREVIEW_MAX_CHARS) {
      text = `${text.slice(0, PREVIEW_MAX_CHARS)}\n… (${text.length - PREVIEW_MAX_CHARS} more characters not shown)`;
    }
    return {
      kind: given.kind === 'diff' ? 'diff' : 'text',
      text,
      ...(given.basis === undefined ? {} : { basis: given.basis }),
    };
  } catch (error) {
    ctx.logger.warn({ err: error, tool: tool.name }, 'preview failed');
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether the files a preview was made from are as they were (and the folders it names are the
 * same folders): an approved change to a file that changed while the call waited must be shown
 * again, never written over the new content.
 * @param basis the preview's basis.
 * @returns the paths that changed (empty when all hold).
 */
export async function changedBasis(basis: readonly PreviewBasis[] | undefined): Promise<string[]> {
  const changed: string[] = [];
  for (const entry of basis ?? []) {
    const now =
      entry.of === 'folder' ? await folderIdentity(entry.path) : await fileHash(entry.path);
    if (now !== entry.sha256) changed.push(entry.path);
  }
  return changed;
}

/**
 * The SHA-256 of a file's content, or null when it does not exist.
 * @param path absolute path.
 */
export async function fileHash(path: string): Promise<string | null> {
  try {
    // Read in pieces, never waiting on a fifo (the path is the agent's).
    return await hashRegularFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    // A folder, a fifo, or no permission: a value no hash can equal, so the basis does not hold.
    return `unreadable:${code ?? 'error'}`;
  }
}
