import { InvalidArgumentError } from 'commander';
import { join, relative, sep } from 'node:path';
import { readRequests } from '../../approval/index.ts';
import { readExecutionLog, type ExecutionLogEntry } from '../../observe/execution-log.ts';
import { readJobRecords } from '../../tools/shell/jobs.ts';
import { takeVaultSnapshot } from '../../observe/vault-snapshot.ts';
import { hostname } from 'node:os';
import { readLock, resolveLayout } from '../../vault/index.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { loadSetup } from '../setup.ts';
import { printable, printableJson } from '../printable.ts';

/** Figures of one tool over the log window. */
export interface ToolFigures {
  calls: number;
  success: number;
  errors: number;
  rejected: number;
  p50_ms: number;
  p95_ms: number;
  /** Set when every call of this name got UNKNOWN_TOOL: a name agents wrote, no tool of the vault. */
  no_such_tool?: true;
}

/** Most days `--days` takes: a century of logs, well inside the dates a `Date` can hold. */
const MAX_DAYS = 36_500;

/**
 * Parse the value of `vaultd status --days`: a whole number of days from 1 to 36500.
 * @param value the option's text.
 * @returns the number of days.
 * @throws InvalidArgumentError for any other value (commander reports it; exit 2).
 */
export function parseDays(value: string): number {
  const days = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(days >= 1 && days <= MAX_DAYS))
    throw new InvalidArgumentError(`expected a whole number of days from 1 to ${MAX_DAYS}.`);
  return days;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

/** Whether a daemon runs on the vault, as far as its lock file tells. */
export interface DaemonState {
  /**
   * `running` (a live process on this host holds the lock), `not_running` (no lock), `stale_lock`
   * (the lock's process is gone: the next start takes it over) or `other_host` (held by a process
   * on another machine, which cannot be checked from here).
   */
  readonly state: 'running' | 'not_running' | 'stale_lock' | 'other_host';
  readonly pid?: number;
  readonly hostname?: string;
  readonly started_at?: string;
}

/**
 * Read the vault's lock and say whether a daemon runs on it.
 * @param stateDir the vault's `.vaultd` folder.
 */
export async function daemonState(stateDir: string): Promise<DaemonState> {
  const lock = await readLock(stateDir);
  if (lock === null) return { state: 'not_running' };
  const { pid, hostname: host, started_at } = lock.info;
  const state = host !== hostname() ? 'other_host' : lock.alive ? 'running' : 'stale_lock';
  return { state, pid, hostname: host, started_at };
}

function describeDaemon(d: DaemonState): string {
  switch (d.state) {
    case 'not_running':
      return 'not running';
    case 'running':
      return `running (pid ${d.pid}, since ${d.started_at})`;
    case 'stale_lock':
      return `not running (stale lock of pid ${d.pid}, started ${d.started_at}; the next start takes it over)`;
    case 'other_host':
      return `lock held by pid ${d.pid} on host ${d.hostname} since ${d.started_at} (cannot be checked from here)`;
  }
}

/**
 * `vaultd status`: notes per folder, pending approvals and per-tool figures from the execution log.
 * @param options common options, `--json`, `--days`.
 */
export async function runStatus(
  options: CommonOptions & { json?: boolean; days: number },
): Promise<number> {
  const { config } = await loadSetup(options);
  const layout = resolveLayout(config);
  // The same counts and pending calls the dashboard shows, under the folders' configured names.
  // The calls waiting are the pending requests of the store, read without writing anything as
  // `vaultd approvals` reads them (a daemon may run): never what the notes' text claims, which an
  // agent that can write the pending folder forges or deletes (review finding F3).
  const snapshot = await takeVaultSnapshot(layout, undefined, await readRequests(layout.state));
  const daemon = await daemonState(layout.state);
  const names: Record<string, string> = {
    inbox: config.folders.inbox,
    in_progress: config.folders.in_progress,
    pending_approval: config.folders.pending,
    approved: config.folders.approved,
    rejected: config.folders.rejected,
    done: config.folders.done,
    failed: config.folders.failed,
  };
  const counts: Record<string, number> = {};
  for (const [state, n] of Object.entries(snapshot.notes)) counts[names[state] ?? state] = n;
  // A note is named as in the pending folder; one recorded elsewhere (In_Progress/ while vaultd
  // looks at it again) by its vault-relative path.
  const pending = snapshot.pending.map((p) => {
    const inPending = relative(layout.pending, join(layout.root, p.path)).split(sep).join('/');
    return { note: inPending.includes('/') ? p.path : inPending, calls: p.calls };
  });

  const days = options.days;
  const since = new Date(Date.now() - days * 86_400_000);
  const times = new Map<string, number[]>();
  const figures: Record<string, ToolFigures> = {};
  // Names that only ever met UNKNOWN_TOOL: what agents asked for, not tools of this vault.
  const realNames = new Set<string>();
  for await (const entry of readExecutionLog(layout.logs, { since })) {
    const name = figureName(entry);
    if (entry.error?.code !== 'UNKNOWN_TOOL') realNames.add(name);
    const f = (figures[name] ??= {
      calls: 0,
      success: 0,
      errors: 0,
      rejected: 0,
      p50_ms: 0,
      p95_ms: 0,
    });
    f.calls++;
    if (entry.status === 'success') f.success++;
    else if (entry.status === 'rejected') f.rejected++;
    else f.errors++;
    const list = times.get(name) ?? [];
    list.push(entry.execution_time_ms);
    times.set(name, list);
  }
  for (const [name, f] of Object.entries(figures)) if (!realNames.has(name)) f.no_such_tool = true;
  for (const [tool, list] of times) {
    list.sort((a, b) => a - b);
    const f = figures[tool] as ToolFigures;
    f.p50_ms = percentile(list, 0.5);
    f.p95_ms = percentile(list, 0.95);
  }

  // The shell pack's background jobs: every running one and the ten latest others.
  const records = await readJobRecords(join(layout.state, 'packs', 'shell', 'jobs'));
  const jobs = [
    ...records.filter((j) => j.state === 'running'),
    ...records.filter((j) => j.state !== 'running').slice(0, 10),
  ].map((j) => ({
    id: j.id,
    state: j.state,
    command: j.command,
    cwd: j.cwd,
    started_at: j.started_at,
    ended_at: j.ended_at,
    exit_code: j.exit_code,
  }));

  if (options.json) {
    process.stdout.write(
      `${printableJson({ vault: layout.root, daemon, folders: counts, pending, tools: figures, jobs, days })}\n`,
    );
    return EXIT.ok;
  }
  const out: string[] = [
    `vault ${layout.root}`,
    `daemon: ${describeDaemon(daemon)}`,
    '',
    'notes per folder:',
  ];
  for (const [name, count] of Object.entries(counts)) out.push(`  ${name.padEnd(18)} ${count}`);
  out.push('', `pending approvals: ${pending.reduce((n, p) => n + p.calls.length, 0)}`);
  for (const p of pending) {
    for (const c of p.calls) out.push(`  ${p.note}  ${c.tool} (${c.id}) since ${c.requested_at}`);
  }
  const rows = Object.entries(figures)
    .sort()
    .map(([name, f]) => [f.no_such_tool === true ? `${name} (no such tool)` : name, f] as const);
  const width = Math.max(20, ...rows.map(([label]) => label.length));
  out.push(
    '',
    `calls per tool name in the execution log, last ${days} day(s):`,
    `  ${'tool'.padEnd(width)} ${'calls'.padStart(6)} ${'ok'.padStart(6)} ${'errors'.padStart(6)} ${'rejected'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p95 ms'.padStart(7)}`,
  );
  for (const [tool, f] of rows) {
    out.push(
      `  ${tool.padEnd(width)} ${String(f.calls).padStart(6)} ${String(f.success).padStart(6)} ${String(f.errors).padStart(6)} ${String(f.rejected).padStart(8)} ${String(f.p50_ms).padStart(7)} ${String(f.p95_ms).padStart(7)}`,
    );
  }
  if (jobs.length > 0) {
    out.push('', 'background jobs (shell pack):');
    for (const j of jobs) {
      const end = j.state === 'running' ? '' : ` ${j.ended_at ?? ''} exit ${String(j.exit_code)}`;
      const line = j.command.split('\n').at(-1) ?? '';
      out.push(`  ${j.id} ${j.state.padEnd(11)} ${j.started_at}${end}  ${line.slice(0, 80)}`);
    }
  }
  // Note names, call ids, tool names from the log and job commands come from agents.
  process.stdout.write(`${out.map(printable).join('\n')}\n`);
  return EXIT.ok;
}

// The name a log entry is counted under when its block had no readable tool name (the result and
// the log say `unknown`, which could be taken for a tool).
const NO_TOOL_NAME = '(no tool name)';

function figureName(entry: ExecutionLogEntry): string {
  const code = entry.error?.code;
  const unread = code === 'INVALID_JSON' || code === 'INVALID_CALL';
  return unread && entry.tool === 'unknown' ? NO_TOOL_NAME : entry.tool;
}
