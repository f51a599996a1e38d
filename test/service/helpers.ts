import { readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  makeVault,
  ROOT,
  STATE_FOLDERS,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';

/** The test tools (`slow_echo`, `side_effect`, `danger_zone`), loaded as a plugin. */
export const PLUGIN = join(ROOT, 'test/fixtures/plugins/test-tools.ts');

/** What {@link serviceConfig} writes besides the vault and the plugin. */
export interface ServiceConfigParts {
  /** pino level; default `debug`. */
  readonly logLevel?: string;
  /** File `side_effect` appends to; default `<vault>/side-effects.log`. */
  readonly sideLog?: string;
  /** Further top-level YAML (no `log`, `plugins` or `tools` key). */
  readonly extra?: string;
}

/** A temp vault whose config loads the test tools. */
export interface ServiceVault extends TempVault {
  /** The default `side_effect` log. */
  readonly sideLog: string;
  /** Rewrite the config file. */
  writeConfig(parts?: ServiceConfigParts): Promise<void>;
}

/**
 * Make a temp vault whose config loads the test tools, reconciles every 2 s and adds `parts`.
 * @param parts log level, side-effect log and extra YAML.
 */
export async function makeServiceVault(parts: ServiceConfigParts = {}): Promise<ServiceVault> {
  const vault = await makeVault();
  const sideLog = join(vault.root, 'side-effects.log');
  const writeConfig = (p: ServiceConfigParts = {}): Promise<void> =>
    writeFile(
      vault.configPath,
      [
        'vault: .',
        "reconcile_cron: '*/2 * * * * *'",
        'log:',
        `  level: ${p.logLevel ?? 'debug'}`,
        'plugins:',
        `  - ${PLUGIN}`,
        'tools:',
        '  side_effect:',
        `    log: ${p.sideLog ?? sideLog}`,
        '  danger_zone:',
        `    log: ${join(vault.root, 'danger.log')}`,
        p.extra ?? '',
        '',
      ].join('\n'),
    );
  await writeConfig(parts);
  return { ...vault, sideLog, writeConfig };
}

/** How often each label was started and ended in a `side_effect` log. */
export interface SideEffectCounts {
  readonly starts: Map<string, number>;
  readonly ends: Map<string, number>;
}

/**
 * Count the `start X` and `end X` lines of a `side_effect` log (a missing file has none).
 * @param path the log file.
 */
export async function readSideEffects(path: string): Promise<SideEffectCounts> {
  const text = existsSync(path) ? await readFile(path, 'utf8') : '';
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(start|end) (.+)$/.exec(line);
    if (!m) continue;
    const map = m[1] === 'start' ? starts : ends;
    map.set(m[2] as string, (map.get(m[2] as string) ?? 0) + 1);
  }
  return { starts, ends };
}

/**
 * The folders each note name is in now, read once per folder.
 * @param vault the vault.
 * @param names note file names.
 */
export async function censusOf(
  vault: TempVault,
  names: readonly string[],
): Promise<Map<string, string[]>> {
  const census = new Map<string, string[]>(names.map((n) => [n, []]));
  for (const folder of STATE_FOLDERS) {
    for (const name of await vault.list(folder)) census.get(name)?.push(folder);
  }
  return census;
}

/**
 * The folder of each note, failing when a note is in no folder or in more than one.
 * @param vault the vault.
 * @param names note file names.
 */
export async function foldersOf(
  vault: TempVault,
  names: readonly string[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [name, folders] of await censusOf(vault, names)) {
    if (folders.length !== 1) {
      throw new Error(`${name} is in ${folders.length} folders: [${folders.join(', ')}]`);
    }
    out.set(name, folders[0] as string);
  }
  return out;
}

/**
 * Wait until every note is in one of `folders` (and in exactly one folder of the vault).
 * @param vault the vault.
 * @param names note file names.
 * @param folders the folders that count as finished.
 * @param timeoutMs deadline.
 */
export async function waitUntilIn(
  vault: TempVault,
  names: readonly string[],
  folders: readonly string[],
  timeoutMs = 20_000,
): Promise<Map<string, string>> {
  let last = new Map<string, string[]>();
  try {
    await waitFor(
      async () => {
        last = await censusOf(vault, names);
        return [...last.values()].every((f) => f.length === 1 && folders.includes(f[0] as string));
      },
      { timeoutMs, intervalMs: 100 },
    );
  } catch {
    const stray = [...last].filter(([, f]) => f.length !== 1 || !folders.includes(f[0] as string));
    throw new Error(
      `not every note reached [${folders.join(', ')}]; e.g. ${JSON.stringify(stray.slice(0, 5))}`,
    );
  }
  return foldersOf(vault, names);
}

/** One JSON line of the daemon's pino log. */
export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [key: string]: unknown;
}

/**
 * The daemon's log lines so far (non-JSON output is skipped).
 * @param daemon the child process.
 */
export function logLinesOf(daemon: DaemonProcess): LogLine[] {
  const out: LogLine[] = [];
  for (const line of daemon.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line cut by the pipe's chunking: only the last one can be, and it is read next time
    }
  }
  return out;
}

/**
 * Wait for a log line whose message matches, and return it.
 * @param daemon the child process.
 * @param msg the message, or a pattern for it.
 * @param after only lines after this many lines count.
 */
export function waitForLog(
  daemon: DaemonProcess,
  msg: string | RegExp,
  after = 0,
): Promise<LogLine> {
  const matches = (m: string): boolean => (typeof msg === 'string' ? m === msg : msg.test(m));
  return waitFor(
    () =>
      logLinesOf(daemon)
        .slice(after)
        .find((l) => matches(l.msg)),
    {
      message: `log line ${String(msg)}; output tail:\n${daemon.output().slice(-2000)}`,
    },
  );
}

/**
 * Send a signal to the daemon and wait for its exit code (or the name of the signal that killed it).
 * @param daemon the child process.
 * @param signal the signal.
 */
export async function signalAndWait(
  daemon: DaemonProcess,
  signal: NodeJS.Signals,
): Promise<number | string> {
  daemon.child.kill(signal);
  return daemon.exited;
}

/**
 * Kill a daemon still running at the end of a test, so no child outlives the suite.
 * @param daemon the child process, if one was started.
 */
export async function killIfRunning(daemon: DaemonProcess | undefined): Promise<void> {
  if (daemon === undefined || daemon.child.exitCode !== null || daemon.child.signalCode !== null)
    return;
  daemon.child.kill('SIGKILL');
  await daemon.exited;
}
