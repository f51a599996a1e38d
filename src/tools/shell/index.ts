import { join } from 'node:path';
import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import { vaultPaths } from '../sandbox/vault-mounts.ts';
import { readShellSettings, shellConfigSchema } from './config.ts';
import { JobStore } from './jobs.ts';
import { probeSandbox, systemView } from './sandbox.ts';
import { shellTools } from './tools.ts';

/**
 * The `shell` pack: bash command lines in a bubblewrap sandbox (`shell_exec`), background jobs
 * (`shell_background`, `shell_job_status`, `shell_job_output`, `shell_job_kill`). Off unless
 * `tools.shell.enabled: true`; where the sandbox cannot run, every call fails with the reason
 * unless the operator wrote `sandbox: none`.
 */
export const shellPack: ToolPack = {
  name: 'shell',
  description: 'bash command lines in a bubblewrap sandbox, and background jobs',
  configSchema: shellConfigSchema,
  enabledByDefault: false,
  staticTools: shellTools(readShellSettings({}), undefined),
  // The timeout's bounds and the variables allowed are written into the schemas from the config.
  listedTools: (config) => shellTools(readShellSettings(config), undefined),
  async start(ctx): Promise<PackHandle> {
    const settings = readShellSettings(ctx.config);
    await ctx.access(settings.roots);
    const view = systemView();
    const status = await probeSandbox(settings, view);
    if (!status.ok) {
      ctx.logger.error(
        { reason: status.reason },
        'the shell sandbox cannot run: every shell call fails until it can (docs/tools/shell.md)',
      );
    } else if (settings.sandbox === 'none') {
      ctx.logger.warn('tools.shell.sandbox is none: shell commands run without a sandbox');
    }
    const jobs = new JobStore(join(ctx.stateDir, 'jobs'), {
      maxJobs: settings.maxJobs,
      keepJobs: settings.keepJobs,
      logger: ctx.logger,
    });
    await jobs.open();
    const paths = await vaultPaths(ctx);
    const tools = shellTools(settings, { status, view, jobs, paths });
    return { tools: () => tools, stop: () => jobs.stop() };
  },
};
