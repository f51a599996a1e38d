import { checkToolSchemas, defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { PackHandle, ToolPack } from '../../protocol/pack.ts';
import type { Tool, ToolContext } from '../../protocol/types.ts';
import { fillArgv, placeholders } from './argv.ts';
import { commandsConfigSchema, readCommands, type CommandConfig } from './config.ts';
import { readRunAs } from '../sandbox/run-as.ts';
import { vaultPaths } from '../sandbox/vault-mounts.ts';
import { isInside } from '../../vault/access.ts';
import { sandboxed, type CommandSandbox } from './sandbox.ts';

/** Output kept of a command's stdout and stderr each. */
const OUTPUT_BYTES = 256 * 1024;

/**
 * The `commands` pack: programs the operator names in config (`tools.commands.<name>`), run with
 * an argument vector filled from the call's validated parameters (never a shell, never split),
 * in a working directory inside the vault, optionally in a bubblewrap sandbox.
 */
export const commandsPack: ToolPack = {
  name: 'commands',
  description: 'programs the operator names in config, run with an argument vector (never a shell)',
  configSchema: commandsConfigSchema,
  listedTools: (config) => readCommands(config).map((command) => commandTool(command)),
  async start(ctx): Promise<PackHandle> {
    const sandbox = { paths: await vaultPaths(ctx), runAs: readRunAs(ctx.config['run_as']) };
    const tools = readCommands(ctx.config).map((command) => commandTool(command, sandbox));
    return { tools: () => tools, stop: async () => undefined };
  },
};

/**
 * Declare one configured command as a tool.
 * @param command its config.
 * @param sandbox the vault's paths and `run_as`, for a sandboxed command (a started pack's).
 * @throws Error when the argv names a parameter the command does not declare.
 */
export function commandTool(command: CommandConfig, sandbox?: CommandSandbox): Tool {
  const missing = placeholders(command.argv).filter((p) => !Object.hasOwn(command.parameters, p));
  if (missing.length > 0) {
    throw new Error(
      `command ${command.name}: its argv names ${missing.map((m) => `{${m}}`).join(', ')} but parameters do not declare ${missing.length > 1 ? 'them' : 'it'}`,
    );
  }
  const paths = Object.keys(command.paths);
  const undeclared = paths.filter((p) => !Object.hasOwn(command.parameters, p));
  if (undeclared.length > 0) {
    throw new Error(
      `command ${command.name}: paths names ${undeclared.join(', ')} but parameters do not declare ${undeclared.length > 1 ? 'them' : 'it'}`,
    );
  }
  return checkToolSchemas(
    defineTool({
      name: command.name,
      description: command.description,
      parameters: command.parameters,
      required: command.required,
      safety: command.safety,
      categories: ['command'],
      ...(command.timeoutMs === undefined ? {} : { timeoutMs: command.timeoutMs }),
      ...(paths.length === 0 ? {} : { pathParameters: paths }),
      preview: (args) =>
        `Run ${JSON.stringify(fillArgv(command.argv, args))}\nin ${command.cwd}${command.sandbox ? ' (in the bubblewrap sandbox, no network)' : ''}` +
        (paths.some((p) => typeof args[p] === 'string')
          ? `\n(${paths.filter((p) => typeof args[p] === 'string').join(', ')}: given to the program as the absolute path of that file)`
          : ''),
      handler: (args, ctx) => runCommand(command, sandbox, args, ctx),
    }),
  );
}

/**
 * The call's arguments with each path parameter (`paths`) replaced by its absolute real path,
 * checked for the access the config gives it, as a filesystem tool's path is: inside a root, and
 * for `write` not one of vaultd's folders or protected paths. A sandboxed command can write only
 * its working directory, so its `write` paths must lie there.
 */
async function resolvePaths(
  command: CommandConfig,
  args: Record<string, unknown>,
  cwd: string,
  ctx: ToolContext,
): Promise<Record<string, unknown>> {
  let out: Record<string, unknown> | undefined;
  for (const [name, mode] of Object.entries(command.paths)) {
    const value = args[name];
    if (typeof value !== 'string') continue;
    const resolved = await ctx.files.resolve(value, mode);
    if (command.sandbox && mode === 'write' && !isInside(resolved.path, cwd)) {
      throw new ToolError(
        'PERMISSION_DENIED',
        `parameter '${name}': ${value} is outside ${command.cwd}, the only folder ${command.name}'s sandbox lets it write`,
      );
    }
    out ??= { ...args };
    out[name] = resolved.path;
  }
  return out ?? args;
}

async function runCommand(
  command: CommandConfig,
  sandbox: CommandSandbox | undefined,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<unknown> {
  // A sandboxed command may write its working directory: it must be one a tool may write.
  const cwd = await ctx.files.resolve(command.cwd, command.sandbox ? 'write' : 'read');
  if (!cwd.exists) {
    throw new ToolError('EXECUTION_FAILED', `the working directory ${command.cwd} does not exist`);
  }
  const argv = fillArgv(command.argv, await resolvePaths(command, args, cwd.path, ctx));
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...command.env };
  if (command.sandbox && sandbox === undefined) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${command.name} runs in a sandbox; start the pack first`,
    );
  }
  const [file, ...rest] =
    command.sandbox && sandbox !== undefined
      ? await sandboxed(argv, cwd.path, env, ctx.files, sandbox)
      : argv;
  if (file === undefined) throw new ToolError('EXECUTION_FAILED', 'the command is empty');
  let result;
  try {
    result = await ctx.exec(file, rest, { cwd: cwd.path, env, maxOutputBytes: OUTPUT_BYTES });
  } catch (error) {
    throw new ToolError('EXECUTION_FAILED', `could not start ${file}: ${(error as Error).message}`);
  }
  const data = {
    argv,
    exit_code: result.exitCode,
    signal: result.signal,
    stdout: result.stdout,
    stderr: result.stderr,
    truncated: result.truncated,
  };
  if (result.exitCode !== 0) {
    const why = result.signal === null ? `exit code ${result.exitCode}` : `signal ${result.signal}`;
    throw new ToolError(
      'EXECUTION_FAILED',
      `${command.name} failed (${why})${result.stderr.trim() === '' ? '' : `: ${result.stderr.trim().slice(0, 2000)}`}`,
      { data, sideEffect: command.safety !== 'safe' },
    );
  }
  return data;
}
