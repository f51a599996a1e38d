import type { Tool } from '../protocol/types.ts';
import type { PipelineContext } from './context.ts';

/** How long a tool's preview may take before the call is shown without one. */
const PREVIEW_DEADLINE_MS = 5_000;

/**
 * What a call would do, for the human who decides it: the tool's `preview` of the normalised
 * arguments, or undefined when the tool has none, it failed or it took longer than 5 s.
 * @param ctx the pipeline context.
 * @param tool the call's tool.
 * @param args the normalised arguments.
 */
export async function makePreview(
  ctx: PipelineContext,
  tool: Tool,
  args: Readonly<Record<string, unknown>>,
): Promise<string | undefined> {
  if (tool.preview === undefined) return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const made = Promise.resolve(
      tool.preview(args as Record<string, unknown>, {
        config: ctx.config.tools[tool.name] ?? {},
        vault: ctx.layout.root,
      }),
    );
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), PREVIEW_DEADLINE_MS);
    });
    const preview = await Promise.race([made, late]);
    if (preview === undefined) ctx.logger.warn({ tool: tool.name }, 'preview took too long');
    return typeof preview === 'string' ? ctx.redact(preview) : undefined;
  } catch (error) {
    ctx.logger.warn({ err: error, tool: tool.name }, 'preview failed');
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
