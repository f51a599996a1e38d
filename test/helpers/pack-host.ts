// The built-in packs started from a config file, as the daemon starts them, with an executor that
// calls their tools: for the packs' own tests and benchmarks, without a daemon around them.
import { ApprovalGate } from '../../src/approval/gate.ts';
import { compilePolicy } from '../../src/approval/policy.ts';
import { loadConfig } from '../../src/config/index.ts';
import { Executor, type ExecutorOptions } from '../../src/execute/index.ts';
import { silentLogger } from '../../src/observe/logger.ts';
import { ToolRegistry } from '../../src/protocol/index.ts';
import { PackHost, packConfigSchemas } from '../../src/tools/host.ts';
import { BUILTIN_PACKS } from '../../src/tools/index.ts';
import { ensureLayout, resolveLayout } from '../../src/vault/index.ts';

/** Packs running on a vault, and an executor running their calls. */
export interface PackHarness {
  readonly registry: ToolRegistry;
  readonly host: PackHost;
  readonly executor: Executor;
}

/**
 * Load a config file (checked against every pack's schema, as at start-up), lay out its vault,
 * start the built-in packs, and make an executor over them with no retries.
 * @param file the config file.
 * @param options `vault` when the file names none, `allow` policy rules, other executor options.
 */
export async function startPackHost(
  file: string,
  options: { vault?: string; allow?: string[]; executor?: ExecutorOptions } = {},
): Promise<PackHarness> {
  const config = loadConfig({
    file,
    ...(options.vault === undefined ? {} : { vault: options.vault }),
    env: {},
    toolSchemas: packConfigSchemas(BUILTIN_PACKS),
  });
  const layout = resolveLayout(config);
  await ensureLayout(layout);
  const registry = new ToolRegistry();
  const host = new PackHost({
    packs: BUILTIN_PACKS,
    config,
    layout,
    registry,
    logger: silentLogger(),
  });
  await host.start();
  const executor = new Executor(registry, {
    gate: new ApprovalGate({ policy: compilePolicy({ allow: options.allow ?? [] }) }),
    runtime: (tool) => host.runtime(tool),
    retry: { attempts: 1, baseDelayMs: 1 },
    ...options.executor,
  });
  return { registry, host, executor };
}
