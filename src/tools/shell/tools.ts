import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { JsonSchema, PreviewContext, Tool, ToolContext } from '../../protocol/types.ts';
import { displayCommand, normalizeCommand } from './command-text.ts';
import type { ShellSettings } from './config.ts';
import { JOB_ID_PATTERN, type JobRecord, type JobStore } from './jobs.ts';
import { planSandbox, type ShellArgs, type VaultPaths } from './prepare.ts';
import {
  runsAsRoot,
  sandboxArgv,
  sandboxEnv,
  type SandboxStatus,
  type SystemView,
} from './sandbox.ts';
import { killTagged, sweepWhenKilled } from './sweep.ts';

/** What the tools need from the started pack. */
export interface ShellRuntime {
  readonly status: SandboxStatus;
  readonly view: SystemView;
  readonly jobs: JobStore;
  readonly paths: VaultPaths;
}

/** Largest `max_bytes` of `shell_job_output`. */
const MAX_READ_BYTES = 1024 * 1024;
/** Environment of the programs vaultd starts (setpriv, bwrap); the command's own is set inside. */
const LAUNCH_ENV = { PATH: '/usr/bin:/bin' };

/**
 * The shell pack's tools, their schemas built from the settings (the timeout's maximum, the
 * variables a call may set), so a value out of bounds is refused before anyone is asked.
 * @param settings the pack's settings.
 * @param runtime the started pack's sandbox status, jobs and paths; undefined before start.
 */
export function shellTools(settings: ShellSettings, runtime: ShellRuntime | undefined): Tool[] {
  const need = (): ShellRuntime => {
    if (runtime === undefined)
      throw new ToolError('EXECUTION_FAILED', 'the shell pack is not running');
    if (!runtime.status.ok) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `the shell sandbox cannot run, so no command runs: ${runtime.status.reason}`,
      );
    }
    return runtime;
  };
  const commandParameters = commandSchema(settings);
  const normalize = (args: ShellArgs): ShellArgs => normalizeArgs(args, settings);
  const preview = (args: ShellArgs, ctx: PreviewContext): Promise<string> =>
    previewText(args, ctx, settings, runtime);

  const shellExec = defineTool<ShellArgs>({
    name: 'shell_exec',
    description:
      'Run a bash command line in a sandbox and wait for it: the working directory (cwd, inside the vault) is writable, ' +
      'the rest of the system read-only, /tmp private, no network unless configured, with CPU, memory, file size and ' +
      'process limits. Returns exit_code, signal, timed_out, stdout, stderr; a non-zero exit is an error with the same data.',
    parameters: commandParameters,
    required: ['command'],
    safety: 'dangerous',
    categories: ['shell'],
    timeoutMs: (settings.maxTimeoutS + 30) * 1000,
    maxOutputBytes: Math.max(256 * 1024, settings.outputBytes * 4),
    normalize,
    pathParameters: ['cwd'],
    // "always allow" grants this command in this folder, not every command.
    grantParameters: ['command', 'cwd'],
    preview,
    async handler(args, ctx) {
      return runCommand(args, ctx, settings, need());
    },
  });

  const shellBackground = defineTool<ShellArgs>({
    name: 'shell_background',
    description:
      'Start a bash command line in the same sandbox as shell_exec without waiting; returns a job_id at once. ' +
      'Follow it with shell_job_status, read its output with shell_job_output, stop it with shell_job_kill. ' +
      'The job is killed at its timeout_s or when vaultd stops; a job cut off by a restart is reported interrupted.',
    parameters: commandParameters,
    required: ['command'],
    safety: 'dangerous',
    categories: ['shell'],
    timeoutMs: 30_000,
    normalize,
    pathParameters: ['cwd'],
    // "always allow" grants this command in this folder, not every command.
    grantParameters: ['command', 'cwd'],
    preview,
    async handler(args, ctx) {
      const rt = need();
      const plan = await planSandbox(args, ctx.files, rt.paths, settings.runAs);
      const record = await rt.jobs.start({
        argv: sandboxArgv(settings, plan, rt.view),
        env: settings.sandbox === 'none' ? sandboxEnv(settings, args.env) : LAUNCH_ENV,
        cwdPath: plan.cwd,
        cwd: args.cwd,
        command: args.command,
        timeoutS: args.timeout_s,
        tag: plan.tag,
      });
      return { job_id: record.id, state: record.state, started_at: record.started_at };
    },
  });

  const jobId: JsonSchema = {
    type: 'string',
    pattern: JOB_ID_PATTERN,
    description: 'the job_id shell_background returned',
  };
  // Job tools look at something that changes while it runs: never cached, never taken as read-only.
  const live = { readOnly: false, idempotent: false } as const;

  const jobStatus = defineTool<{ job_id: string }>({
    name: 'shell_job_status',
    description:
      'The state of a background job (running, exited, killed, timed_out, interrupted), its exit code or signal, ' +
      'runtime, output size and the last lines of its output.',
    parameters: { job_id: jobId },
    required: ['job_id'],
    safety: 'safe',
    ...live,
    categories: ['shell'],
    async handler(args) {
      const rt = need();
      const record = await rt.jobs.get(args.job_id);
      return statusOf(rt.jobs, record);
    },
  });

  const jobOutput = defineTool<{ job_id: string; offset: number; max_bytes: number }>({
    name: 'shell_job_output',
    description:
      'Read a background job’s output (stdout and stderr interleaved, as written) from a byte offset; ' +
      'call again with next_offset to read on, while it runs or after it ended. done is true once the job ended and all was read.',
    parameters: {
      job_id: jobId,
      offset: { type: 'integer', minimum: 0, default: 0 },
      max_bytes: { type: 'integer', minimum: 1, maximum: MAX_READ_BYTES, default: 65_536 },
    },
    required: ['job_id'],
    safety: 'safe',
    ...live,
    categories: ['shell'],
    maxOutputBytes: MAX_READ_BYTES * 3,
    async handler(args) {
      const rt = need();
      const record = await rt.jobs.get(args.job_id);
      const { text, next, size } = await rt.jobs.read(record.id, args.offset, args.max_bytes);
      return {
        job_id: record.id,
        state: record.state,
        offset: args.offset,
        next_offset: next,
        size,
        done: record.state !== 'running' && next >= size,
        output: text,
      };
    },
  });

  const jobKill = defineTool<{ job_id: string }>({
    name: 'shell_job_kill',
    description:
      'Kill a background job with every process it started; returns its final state. A job that already ended is left as it is.',
    parameters: { job_id: jobId },
    required: ['job_id'],
    safety: 'cautious',
    ...live,
    categories: ['shell'],
    async handler(args) {
      const rt = need();
      const record = await rt.jobs.kill(args.job_id);
      return statusOf(rt.jobs, record);
    },
  });

  return [shellExec, shellBackground, jobStatus, jobOutput, jobKill];
}

function commandSchema(settings: ShellSettings): Record<string, JsonSchema> {
  return {
    command: {
      type: 'string',
      minLength: 1,
      maxLength: 65_536,
      pattern: '^[^\\u0000]*$',
      description:
        'a bash command line, run with bash -c; operators (;, &&, |), substitutions and redirections are allowed but always need a human',
    },
    cwd: {
      type: 'string',
      minLength: 1,
      default: '.',
      description: 'working directory inside the vault (relative to it), writable by the command',
    },
    timeout_s: {
      type: 'integer',
      minimum: 1,
      maximum: settings.maxTimeoutS,
      default: settings.defaultTimeoutS,
      description: `seconds before the command and everything it started are killed (at most ${settings.maxTimeoutS})`,
    },
    env: {
      type: 'object',
      ...(settings.envAllow.length === 0
        ? { maxProperties: 0 }
        : { propertyNames: { enum: [...settings.envAllow] } }),
      additionalProperties: { type: 'string', maxLength: 4096, pattern: '^[^\\u0000]*$' },
      default: {},
      description:
        settings.envAllow.length === 0
          ? 'no variables may be set'
          : `variables to set; allowed names: ${settings.envAllow.join(', ')}`,
    },
  };
}

function normalizeArgs(args: ShellArgs, settings: ShellSettings): ShellArgs {
  const command = normalizeCommand(args.command);
  if (displayCommand(command) === '') {
    throw new ToolError('INVALID_PARAMS', 'the command is empty: give a bash command line');
  }
  const cwd = (args.cwd ?? '.').normalize('NFC').trim();
  return {
    command,
    cwd: cwd === '' ? '.' : cwd,
    timeout_s: args.timeout_s ?? settings.defaultTimeoutS,
    env: Object.fromEntries(
      Object.entries(args.env ?? {})
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, v.normalize('NFC')]),
    ),
  };
}

async function runCommand(
  args: ShellArgs,
  ctx: ToolContext,
  settings: ShellSettings,
  rt: ShellRuntime,
): Promise<unknown> {
  const plan = await planSandbox(args, ctx.files, rt.paths, settings.runAs);
  const [file, ...rest] = sandboxArgv(settings, plan, rt.view);
  let result;
  const stopSweeping = sweepWhenKilled(plan.tag, ctx.signal, args.timeout_s * 1000);
  try {
    result = await ctx.exec(file ?? settings.bwrapPath, rest, {
      cwd: plan.cwd,
      env: settings.sandbox === 'none' ? sandboxEnv(settings, args.env) : LAUNCH_ENV,
      maxOutputBytes: settings.outputBytes,
      timeoutMs: args.timeout_s * 1000,
    });
  } catch (error) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `could not start the sandbox: ${(error as Error).message}`,
    );
  } finally {
    stopSweeping();
  }
  if (result.killed) await killTagged([plan.tag]);
  const timedOut = result.killed && !ctx.signal.aborted;
  const data = {
    exit_code: result.exitCode,
    signal: result.signal,
    timed_out: timedOut,
    stdout: result.stdout,
    stderr: result.stderr,
    truncated: result.truncated,
    duration_ms: result.durationMs,
  };
  if (timedOut) {
    throw new ToolError(
      'TIMEOUT',
      `the command ran longer than timeout_s (${args.timeout_s} s) and was killed with everything it started; it may have changed files before that`,
      { data, sideEffect: true, recoverable: false },
    );
  }
  if (result.exitCode !== 0) {
    const why =
      result.signal === null
        ? `exited with code ${String(result.exitCode)}`
        : `was killed by ${result.signal}`;
    const stderr = result.stderr.trim();
    throw new ToolError(
      'EXECUTION_FAILED',
      `the command ${why}${stderr === '' ? '' : `: ${stderr.slice(-2000)}`}`,
      { data, sideEffect: true },
    );
  }
  return data;
}

/** A job's status as the job tools answer it: its record, output size and last lines. */
async function statusOf(jobs: JobStore, record: JobRecord): Promise<Record<string, unknown>> {
  return statusData(record, await jobs.logSize(record.id), await jobs.tail(record.id));
}

function statusData(record: JobRecord, size: number, tail: string): Record<string, unknown> {
  const end = record.ended_at === null ? Date.now() : Date.parse(record.ended_at);
  return {
    job_id: record.id,
    state: record.state,
    command: displayCommand(record.command),
    cwd: record.cwd,
    started_at: record.started_at,
    ended_at: record.ended_at,
    runtime_s: Math.max(0, Math.round((end - Date.parse(record.started_at)) / 100) / 10),
    exit_code: record.exit_code,
    signal: record.signal,
    reason: record.reason,
    output_bytes: size,
    tail,
  };
}

async function previewText(
  args: ShellArgs,
  ctx: PreviewContext,
  settings: ShellSettings,
  runtime: ShellRuntime | undefined,
): Promise<string> {
  const command = displayCommand(args.command);
  const longest = Math.max(2, ...[...command.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  let where: string;
  try {
    where = ctx.files.display(await ctx.files.resolve(args.cwd, 'write'));
  } catch (error) {
    // A folder the call may not use fails it whatever the human says: say so, not "writable".
    if (error instanceof ToolError) return `This call will fail: ${error.message}`;
    where = `${args.cwd} (refused: ${(error as Error).message})`;
  }
  const r = settings.resources;
  const lines = [
    settings.sandbox === 'none'
      ? 'Run WITHOUT a sandbox (tools.shell.sandbox: none): the command can read and write whatever vaultd’s user can.'
      : 'Run in the bubblewrap sandbox:',
    `${fence}sh`,
    command,
    fence,
    `- directory: ${where} (writable; the system read-only, a private /tmp, vaultd’s state hidden)`,
    `- network: ${settings.network ? 'shared with the host (tools.shell.network: true)' : 'none'}`,
    `- limits: timeout ${args.timeout_s} s, CPU ${r.cpuSeconds} s, memory ${r.memoryMb} MiB, files ${r.fileSizeMb} MiB, ${r.processes} processes, ${r.openFiles} open files`,
    `- environment: PATH, HOME=/tmp, TMPDIR=/tmp${
      Object.keys(args.env).length === 0
        ? ''
        : `, ${Object.entries(args.env)
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(', ')}`
    }`,
  ];
  if (runsAsRoot()) lines.push(`- runs as uid ${settings.runAs.uid}, gid ${settings.runAs.gid}`);
  if (args.command !== command) {
    lines.push(
      '- this is a compound command line (operators, substitutions or redirections): policy prefix rules never allow it',
    );
  }
  if (runtime !== undefined && !runtime.status.ok) {
    lines.push(`- the sandbox cannot run here, so approving will fail: ${runtime.status.reason}`);
  }
  return lines.join('\n');
}
