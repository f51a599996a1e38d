import { Command, CommanderError, Option } from 'commander';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '../config/index.ts';
import { runCheck } from './commands/check.ts';
import { runInit } from './commands/init.ts';
import { runDaemonCommand } from './commands/run.ts';
import { parseDays, runStatus } from './commands/status.ts';
import { runTools } from './commands/tools.ts';
import { runGrants, runRevoke } from './commands/grants.ts';
import { runApprovals, runDecision, type DecideOptions } from './commands/decide.ts';
import { exitQuietlyOnClosedStdout } from './closed-stdout.ts';
import { EXIT } from './exit-codes.ts';
import { UsageError } from './usage-error.ts';
import { enclosingVault, type ConfigSource } from './vault-check.ts';

/** Options every command takes. */
export interface CommonOptions {
  readonly vault?: string;
  readonly config?: string;
}

/**
 * The config file a command uses: `--config`, else `VAULTD_CONFIG`, else with `--vault DIR` the
 * vault's own `DIR/vaultd.yaml` (as `vaultd init DIR` writes it and `vaultd check` finds it), else
 * `./vaultd.yaml`; each only when it exists.
 * @param options the command's common options.
 */
export function configFileOf(options: CommonOptions): string | undefined {
  return configSourceOf(options)?.file;
}

/**
 * The config file a command uses and how it was found (for messages), as {@link configFileOf}.
 * @param options the command's common options.
 */
export function configSourceOf(options: CommonOptions): ConfigSource | undefined {
  if (options.config !== undefined) return { file: options.config, from: '--config' };
  const fromEnv = process.env['VAULTD_CONFIG'];
  if (fromEnv) return { file: fromEnv, from: '$VAULTD_CONFIG' };
  if (options.vault !== undefined) {
    // Without it, `--vault DIR` ran DIR with the defaults: no policy, no packs of its config.
    // A DIR inside another vault is refused below as a folder of it would be.
    const own = resolve(options.vault, 'vaultd.yaml');
    if (!existsSync(own)) return undefined;
    refuseInsideVault(resolve(options.vault), own);
    return { file: own, from: "the vault's own, found with --vault" };
  }
  if (existsSync('vaultd.yaml')) {
    refuseInsideVault(process.cwd(), join(process.cwd(), 'vaultd.yaml'));
    return { file: 'vaultd.yaml', from: 'found in the current folder' };
  }
  return undefined;
}

/**
 * Refuse a config found without `--config` in a folder inside a vault, as `vaultd check` does with
 * the nearest config: a `vaultd.yaml` in a folder of a vault (the inbox, say, where the operator
 * ran `vaultd approvals`) may be an agent's, and its plugins would run as the operator. A vault is
 * known by its state folder here: a config kept above the vault it names (`~/vaultd.yaml` for
 * `~/vault/`) leaves the vault's own usable.
 * @param dir the folder the config was found in.
 * @param file the config found.
 * @throws UsageError when a folder above `dir` holds a vault's state folder.
 */
function refuseInsideVault(dir: string, file: string): void {
  const outer = enclosingVault(dir, false);
  if (outer !== undefined) {
    throw new UsageError(
      `${file} lies inside the vault at ${outer}, where agents may write: vaultd does not load a config found there; pass --config with the vault's own config, or run vaultd from another folder`,
    );
  }
}

/** Commands that run the daemon: their stdout is the log, and they finish what they started. */
const DAEMON_COMMANDS = new Set(['run', 'once']);

function program(): Command {
  const cli = new Command('vaultd')
    .description('Run the tool calls that agents write into the notes of a markdown vault.')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride()
    .hook('preAction', (_cli, command) => {
      // A command's output may be piped into `head`; the daemon's log is another matter.
      if (!DAEMON_COMMANDS.has(command.name())) exitQuietlyOnClosedStdout();
    });

  const common = (cmd: Command): Command =>
    cmd
      .option('--vault <dir>', 'the vault (overrides the config file)')
      .option(
        '--config <file>',
        "YAML config file (default: $VAULTD_CONFIG, else the --vault folder's vaultd.yaml, else ./vaultd.yaml)",
      );

  common(cli.command('run'))
    .description('run the daemon in the foreground (what systemd starts)')
    .action(async (opts: CommonOptions) => {
      process.exitCode = await runDaemonCommand(opts, { watch: true });
    });

  common(cli.command('once'))
    .description('process every note waiting in the vault, then exit')
    .option('--no-progress', 'no progress bar, even on a terminal')
    .action(async (opts: CommonOptions & { progress: boolean }) => {
      process.exitCode = await runDaemonCommand(opts, { watch: false, progress: opts.progress });
    });

  common(cli.command('check'))
    .description('show what would run in the given notes and every problem; runs nothing')
    .argument('<path...>', 'notes, or folders to search for .md notes')
    .option('--json', 'print the findings as JSON')
    .addHelpText(
      'after',
      '\nConfig: --config, else $VAULTD_CONFIG, else the nearest vaultd.yaml at or above each note.\nExit codes: 0 no error, 1 an error, 2 a bad path or config.',
    )
    .action(async (files: string[], opts: CommonOptions & { json?: boolean }) => {
      process.exitCode = await runCheck(files, opts);
    });

  common(cli.command('tools'))
    .description('list the registered tools')
    .option('--json', 'full declarations as JSON')
    .addOption(
      new Option('--format <format>', 'schemas for a model API').choices([
        'openai',
        'anthropic',
        'mcp',
      ]),
    )
    .action(
      async (opts: CommonOptions & { json?: boolean; format?: 'openai' | 'anthropic' | 'mcp' }) => {
        process.exitCode = await runTools(opts);
      },
    );

  common(cli.command('status'))
    .description('notes per folder, pending approvals and per-tool figures from the log')
    .option('--json', 'print as JSON')
    .option('--days <n>', 'days of execution log to read, 1 to 36500', parseDays, 7)
    .action(async (opts: CommonOptions & { json?: boolean; days: number }) => {
      process.exitCode = await runStatus(opts);
    });

  cli
    .command('init')
    .description(
      'create a vault: folders, a commented config and TOOLS.md for agents (the only command that creates one)',
    )
    .argument('[dir]', 'the vault folder (default: the current folder, when empty or a vault)')
    .option('--config <file>', 'set up the vault this config names; writes no vaultd.yaml into it')
    .action(async (dir: string | undefined, opts: { config?: string }) => {
      process.exitCode = await runInit(dir, opts);
    });

  const grants = common(cli.command('grants'))
    .description('list the "always allow" grants')
    .option('--json', 'print as JSON')
    .action(async (opts: CommonOptions & { json?: boolean }) => {
      process.exitCode = await runGrants(opts);
    });
  common(grants.command('list'))
    .description('list the "always allow" grants')
    .option('--json', 'print as JSON')
    .action(async (_opts: CommonOptions, cmd: Command) => {
      process.exitCode = await runGrants(cmd.optsWithGlobals<CommonOptions & { json?: boolean }>());
    });
  common(grants.command('revoke'))
    .description('revoke a grant (a rule as listed, or every grant of a tool): its calls ask again')
    .argument('<rule|tool>')
    .action(async (tool: string, _opts: CommonOptions, cmd: Command) => {
      // `--vault`/`--config` may land on the parent `grants` command: read both.
      process.exitCode = await runRevoke(tool, cmd.optsWithGlobals<CommonOptions>());
    });

  common(cli.command('approve'))
    .description(
      'approve pending calls: a request id (see vaultd approvals), or a note (all its calls, or one with --call)',
    )
    .argument('<id|note>')
    .option('--call <id>', 'only this call of the note')
    .option('--reason <text>', 'told to the agent')
    .option('--always', 'approve, and let this tool run from now on without asking')
    .option(
      '--scope <rule>',
      'like --always (which it implies), for calls matching this rule only, e.g. "write_file(path:Notes/*)"',
    )
    .action(async (target: string, opts: DecideOptions) => {
      process.exitCode = await runDecision('approve', target, opts);
    });

  common(cli.command('reject'))
    .description(
      'reject pending calls: a request id, or a note (all its calls, or one with --call)',
    )
    .argument('<id|note>')
    .option('--call <id>', 'only this call of the note')
    .option('--reason <text>', 'told to the agent')
    .action(async (target: string, opts: DecideOptions) => {
      process.exitCode = await runDecision('reject', target, opts);
    });

  common(cli.command('approvals'))
    .description('list the calls waiting for a decision, with their request ids')
    .option('--json', 'print as JSON')
    .action(async (opts: CommonOptions & { json?: boolean }) => {
      process.exitCode = await runApprovals(opts);
    });

  return cli;
}

/**
 * Run the command line; sets `process.exitCode` (0 fine, 1 failure, 2 bad usage or config).
 * @param argv the full `process.argv`.
 */
export async function main(argv: readonly string[]): Promise<void> {
  try {
    await program().parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`vaultd: ${error.message}\n`);
      process.exitCode = EXIT.usage;
      return;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`vaultd: ${error.message}\n`);
      process.exitCode = EXIT.usage;
      return;
    }
    process.stderr.write(`vaultd: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = EXIT.failure;
  }
}
