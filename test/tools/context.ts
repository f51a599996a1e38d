import type { ToolContext, ToolProgress } from '../../src/protocol/types.ts';
import { silentLogger } from '../../src/observe/logger.ts';
import { CallProcesses } from '../../src/execute/exec.ts';
import { noAccess } from '../../src/vault/access.ts';

/** A tool context for calling handlers directly, plus the controller behind its signal. */
export interface TestContext {
  readonly ctx: ToolContext;
  readonly controller: AbortController;
  /** Progress updates the handler reported. */
  readonly progress: ToolProgress[];
  /** The processes `ctx.exec` started (to wait until they are gone). */
  readonly processes: CallProcesses;
}

/**
 * Build a context as the executor would: a real AbortController signal, a silent pino logger,
 * the tool's config section frozen.
 * @param config the `tools.<name>` section; defaults to `{}`.
 * @param vault absolute vault path, when the tool needs one.
 */
export function makeContext(config: Record<string, unknown> = {}, vault?: string): TestContext {
  const controller = new AbortController();
  const progress: ToolProgress[] = [];
  const processes = new CallProcesses(controller.signal);
  const ctx: ToolContext = {
    signal: controller.signal,
    logger: silentLogger(),
    vault,
    note: 'Needs_Action/test.md',
    callId: 'call_test',
    config: Object.freeze({ ...config }),
    progress: (update) => {
      progress.push(update);
    },
    files: noAccess(),
    exec: (file, args, options) => processes.exec(file, args, options),
  };
  return { ctx, controller, progress, processes };
}
