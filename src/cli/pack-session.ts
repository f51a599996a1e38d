import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalGate, compilePolicy, GrantStore } from '../approval/index.ts';
import { Executor } from '../execute/index.ts';
import { pino } from 'pino';
import { ToolRegistry } from '../protocol/index.ts';
import { PackHost, type PackInfo } from '../tools/host.ts';
import { resolveLayout } from '../vault/index.ts';
import type { Setup } from './setup.ts';

/** A config's packs started as the daemon starts them, for commands that look but run nothing. */
export interface PackSession {
  /** The tools the started packs registered. */
  readonly registry: ToolRegistry;
  /** Packs with their tools, disabled ones flagged. */
  describe(): PackInfo[];
  /** What the packs warned about as they started (an API key variable not set, …), one line each. */
  readonly warnings: readonly string[];
  /**
   * An executor that checks calls as the daemon's would (never asked to run one here) and the
   * gate with the config's policy and the vault's grants; made on first use (reads grants.json).
   */
  checker(): { readonly executor: Executor; readonly gate: ApprovalGate };
  stop(): Promise<void>;
}

/**
 * Start a config's packs (MCP servers, plugins, …) so that their tools are registered as in a
 * running daemon, with an executor and gate built like the daemon's; `stop()` ends them.
 * @param setup from `loadSetup`.
 * @throws whatever a pack throws at start; the packs started before it are stopped first.
 */
export async function startPackSession(setup: Setup): Promise<PackSession> {
  const { config } = setup;
  const layout = resolveLayout(config);
  const registry = new ToolRegistry();
  // What a daemon would log as a warning when its packs start, kept for the command to show.
  const warnings: string[] = [];
  const logger = pino(
    { level: 'warn' },
    {
      write(line: string) {
        const { msg } = JSON.parse(line) as { msg?: unknown };
        if (typeof msg === 'string' && !warnings.includes(msg)) warnings.push(msg);
      },
    },
  );
  // The packs' state folders are this session's own, never the vault's: a daemon may be running
  // on the vault (no lock is taken here), and the shell pack's start kills the jobs recorded
  // there as left over, the git pack's empties the HOME its git processes use.
  const scratch = await mkdtemp(join(tmpdir(), 'vaultd-packs-'));
  const removeScratch = (): Promise<void> => rm(scratch, { recursive: true, force: true });
  const host = new PackHost({
    packs: setup.packs,
    config,
    layout,
    registry,
    logger,
    packsStateDir: join(scratch, 'packs'),
  });
  try {
    await host.start();
  } catch (error) {
    await host.stop().catch(() => undefined);
    await removeScratch().catch(() => undefined);
    throw error;
  }
  let checker: { executor: Executor; gate: ApprovalGate } | undefined;
  return {
    registry,
    describe: () => host.describe(),
    warnings,
    checker() {
      if (checker !== undefined) return checker;
      const gate = new ApprovalGate({
        policy: compilePolicy(config.policy),
        grants: GrantStore.open(layout.state),
      });
      const executor = new Executor(registry, {
        vault: layout.root,
        gate,
        toolConfig: (name) => config.tools[name] ?? {},
        runtime: (tool) => host.runtime(tool),
      });
      checker = { executor, gate };
      return checker;
    },
    stop: async () => {
      try {
        await host.stop();
      } finally {
        await removeScratch().catch(() => undefined);
      }
    },
  };
}
