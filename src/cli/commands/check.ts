import { existsSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { ApprovalGate, readAllowedTools, toolIdentity } from '../../approval/index.ts';
import { Executor } from '../../execute/index.ts';
import { parseNote } from '../../note/index.ts';
import { findOwnedRanges, readStructure } from '../../note/markdown.ts';
import { CONFIG_DEFAULTS } from '../../config/defaults.ts';
import { tooManyCallsMessage, waitingBlocks } from '../../pipeline/process-note.ts';
import { mayRunAgain } from '../../pipeline/settle-calls.ts';
import { readNote } from '../../pipeline/read-note.ts';
import { effectsOf } from '../../protocol/effects.ts';
import { mayBeUndecoded } from '../../vault/file-names.ts';
import { hashArguments } from '../../protocol/hash-arguments.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { startPackSession, type PackSession } from '../pack-session.ts';
import { builtinRegistry, loadSetup } from '../setup.ts';
import { UsageError } from '../usage-error.ts';
import { enclosingVault } from '../vault-check.ts';
import { printable, printableJson } from '../printable.ts';

/** One line of `vaultd check`'s report. */
export interface CheckFinding {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly severity: 'ok' | 'warning' | 'error';
  readonly code: string;
  readonly message: string;
  readonly callId?: string;
  readonly tool?: string;
}

/** What a note is checked against: the tools, the gate, and the note size cap. */
export interface CheckContext {
  readonly executor: Executor;
  readonly gate: ApprovalGate;
  readonly maxBytes: number;
  readonly maxCalls: number;
}

// Info strings an agent may write for a call that vaultd never reads as one.
const NEAR_MISS_INFO = new Set(['toolcall', 'tool-call', 'tool_call', 'jsonc', 'json5', 'jsonl']);

/**
 * Find every call in one note and say what would happen to it, without running anything: the
 * same validation, normalisation, effects and gate decision (policy, grants, `allowed_tools`)
 * as the pipeline's, plus warnings for blocks vaultd would not read as calls.
 * @param path the note.
 * @param file how to name it in findings.
 * @param context the executor and gate to check against.
 */
export async function checkNote(
  path: string,
  file: string,
  context: CheckContext,
): Promise<CheckFinding[]> {
  const findings: CheckFinding[] = [];
  const at = (
    line: number,
    column: number,
    severity: CheckFinding['severity'],
    code: string,
    message: string,
    extra: Partial<CheckFinding> = {},
  ): void => {
    findings.push({ file, line, column, severity, code, message, ...extra });
  };
  const read = await readNote(path, context.maxBytes);
  if (read.kind === 'gone') {
    if (mayBeUndecoded(basename(path)))
      at(
        1,
        1,
        'error',
        'BAD_FILE_NAME',
        'the file name is not valid UTF-8, so vaultd cannot read the note by it (the daemon moves such notes to Failed/ unread); give it a UTF-8 name',
      );
    else at(1, 1, 'error', 'ENOENT', 'no such file');
    return findings;
  }
  if (read.kind !== 'text') {
    const code =
      read.kind === 'too_large'
        ? 'NOTE_TOO_LARGE'
        : read.kind === 'not_a_file'
          ? 'NOT_A_FILE'
          : 'NOTE_NOT_TEXT';
    at(1, 1, 'error', code, `cannot check this file: ${read.kind.replace('_', ' ')}`);
    return findings;
  }
  const parsed = parseNote(read.text);
  const waiting = waitingBlocks(parsed);
  if (waiting > context.maxCalls) {
    at(1, 1, 'error', 'NOTE_TOO_LARGE', tooManyCallsMessage(waiting, context.maxCalls));
    return findings;
  }
  // A broken front-matter is one problem for the agent, however many errors YAML finds in it.
  const yamlErrors = parsed.diagnostics.filter((d) => d.code === 'invalid-front-matter');
  // A block that could not be read as a call is answered once, as a call is: with its result in
  // the note, the daemon leaves it alone (settle-calls.ts), so it is no error here either.
  const answered = new Map(
    parsed.invalid.filter((b) => parsed.results.has(b.id)).map((b) => [b.id, b] as const),
  );
  for (const d of parsed.diagnostics) {
    if (d.code === 'invalid-front-matter' && d !== yamlErrors[0]) continue;
    const block = d.callId === undefined ? undefined : answered.get(d.callId);
    if (block !== undefined) {
      const result = parsed.results.get(block.id);
      const label = `${block.name ?? 'a block that is not a call'} (${block.id})`;
      at(
        block.start.line,
        block.start.column,
        'ok',
        'HAS_RESULT',
        `${label} already has a result (${result?.status ?? 'error'} ${block.code}); it will not be answered again: fix the block to make it a new call`,
        { callId: block.id, ...(block.name === undefined ? {} : { tool: block.name }) },
      );
      continue;
    }
    const more =
      d === yamlErrors[0] && yamlErrors.length > 1
        ? ` (${yamlErrors.length - 1} more YAML error(s) after it)`
        : '';
    at(
      d.start.line,
      d.start.column,
      d.severity,
      String(d.code),
      `${d.message}${more}`,
      d.callId === undefined ? {} : { callId: d.callId },
    );
  }
  for (const finding of nearMisses(read.text, file)) findings.push(finding);

  const unsupported = parsed.diagnostics.find((d) => d.code === 'UNSUPPORTED_FRONT_MATTER');
  const allowed = readAllowedTools(parsed.data['allowed_tools']);
  if (allowed.problem !== undefined && unsupported === undefined)
    at(1, 1, 'error', 'INVALID_ALLOWED_TOOLS', allowed.problem);
  for (const call of parsed.calls) {
    const where = [call.start.line, call.start.column] as const;
    const extra = { callId: call.id, tool: call.name };
    const label = `${call.name} (${call.id})`;
    if (unsupported !== undefined) {
      // The pipeline runs nothing in such a note: its allowed_tools cannot be read.
      at(
        ...where,
        'error',
        'UNSUPPORTED_FRONT_MATTER',
        `${label} would not run: ${unsupported.message}`,
        extra,
      );
      continue;
    }
    const previous = parsed.results.get(call.id);
    const again = previous !== undefined && mayRunAgain(previous, call.arguments);
    if (previous !== undefined && !again) {
      at(
        ...where,
        'ok',
        'HAS_RESULT',
        `${label} already has a result (${previous.status}); it will not run again`,
        extra,
      );
      continue;
    }
    const checked = context.executor.check({
      id: call.id,
      name: call.name,
      arguments: call.arguments,
    });
    if (!checked.ok) {
      at(...where, 'error', checked.error.code, checked.error.message, extra);
      continue;
    }
    const { tool, args } = checked;
    const effects = await effectsOf(tool, args, await context.executor.facts(tool));
    const verdict = context.gate.evaluate({
      id: call.id,
      name: tool.name,
      arguments: args,
      spelledPaths: checked.spelledPaths,
      argsHash: hashArguments(args),
      safety: effects.safety,
      effects,
      allowedTools: allowed.allowed,
      identity: toolIdentity(tool),
    });
    const rerun = again ? ' again (its parameters changed since its error result)' : '';
    if (verdict.action === 'deny') {
      at(...where, 'error', 'PERMISSION_DENIED', verdict.message, extra);
    } else if (verdict.action === 'ask') {
      at(
        ...where,
        'ok',
        'WOULD_ASK',
        `${label} [${effects.safety}] would ask a human first${rerun}: ${verdict.reason}`,
        extra,
      );
    } else {
      const by = verdict.auth.rule === null ? verdict.auth.approvedBy : verdict.auth.rule;
      at(
        ...where,
        'ok',
        'WOULD_RUN',
        `${label} [${effects.safety}] would run${rerun} (${by})`,
        extra,
      );
    }
  }
  return findings;
}

/**
 * Fenced blocks an agent meant as calls that vaultd does not read as calls: an info string like
 * `toolcall` or `jsonc`, or a `tool_call` key in a fence that is not `json`. Read with the same
 * structure reader as calls (quotes, callouts and lists included); vaultd's own sections are
 * skipped.
 */
function nearMisses(text: string, file: string): CheckFinding[] {
  const found: CheckFinding[] = [];
  const structure = readStructure(text);
  const owned = findOwnedRanges(structure, text.length);
  for (const fence of structure.fences) {
    if (owned.some(([a, b]) => fence.start >= a && fence.start < b)) continue;
    const info = fence.lang;
    let message: string;
    if (NEAR_MISS_INFO.has(info)) {
      message = `a block fenced as "${info}" is never run: write the call in a block fenced as json`;
    } else if (info !== 'json' && /"tool_call"\s*:/.test(fence.value)) {
      message = `this block has a tool_call but is fenced as "${info === '' ? '(no language)' : info}", so it is never run: fence it as json if it is a call`;
    } else {
      continue;
    }
    const line = fence.line;
    const column = fence.markerAt - (structure.lineStarts[line] ?? 0) + 1;
    found.push({
      file,
      line: line + 1,
      column,
      severity: 'warning',
      code: 'NOT_A_CALL_FENCE',
      message,
    });
  }
  return found;
}

/**
 * Expand the arguments of `vaultd check` into notes: files as given, folders searched for `.md`
 * files (dot folders such as `.obsidian/` and `.vaultd/` skipped), in sorted order.
 * @param paths files and folders.
 * @throws UsageError naming a path that does not exist.
 */
export async function collectNotes(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && entry.name.endsWith('.md')) out.push(path);
    }
  };
  for (const given of paths) {
    const path = resolve(given);
    let isDir: boolean;
    try {
      isDir = statSync(path).isDirectory();
    } catch {
      throw new UsageError(`check: ${given}: no such file or folder`);
    }
    if (isDir) await walk(path);
    else out.push(path);
  }
  return [...new Set(out)];
}

/**
 * The config file that applies to a note when neither `--config` nor `$VAULTD_CONFIG` is given:
 * the nearest `vaultd.yaml` in the note's folder or above it, as `vaultd init` writes it. A config
 * loads code (plugins, MCP servers, command tools), and the folders of a vault are where agents
 * write: one found inside another vault (a `vaultd.yaml` or `.vaultd/` further up) is refused, as
 * an agent may have put it next to its note.
 * @param note absolute path of the note.
 * @throws UsageError when the nearest config lies inside a vault.
 */
export function nearestConfig(note: string): string | undefined {
  for (let dir = dirname(note); ; dir = dirname(dir)) {
    const candidate = join(dir, 'vaultd.yaml');
    if (existsSync(candidate)) {
      const outer = enclosingVault(dir);
      if (outer !== undefined) {
        throw new UsageError(
          `${candidate} lies inside the vault at ${outer}, where agents may write: vaultd check does not load a config found there; pass --config with the vault's own config`,
        );
      }
      return candidate;
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Sort findings by file, line and column (their order of discovery after that) and drop exact
 * duplicates.
 * @param findings as found.
 */
export function sortFindings(findings: readonly CheckFinding[]): CheckFinding[] {
  const seen = new Set<string>();
  const unique = findings.filter((f) => {
    const key = JSON.stringify([f.file, f.line, f.column, f.severity, f.code, f.message]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return unique
    .map((f, index) => ({ f, index }))
    .sort(
      (a, b) =>
        (a.f.file < b.f.file ? -1 : a.f.file > b.f.file ? 1 : 0) ||
        a.f.line - b.f.line ||
        a.f.column - b.f.column ||
        a.index - b.index,
    )
    .map(({ f }) => f);
}

/**
 * `vaultd check PATH…`: every call of the notes (folders searched for `.md` files) with what would
 * happen to it, and every problem, as `file:line:column: severity code message` lines sorted by
 * place. The config is `--config`, else `$VAULTD_CONFIG`, else the nearest `vaultd.yaml` at or
 * above each note; its packs are started as the daemon starts them (no call runs). Without any,
 * the built-in tools and no policy, with a `NO_CONFIG` warning.
 * @param paths notes and folders.
 * @param options common options and `--json`.
 * @returns 0 when nothing is an error, 1 when something is, 2 (thrown) for a bad path or config.
 */
export async function runCheck(
  paths: readonly string[],
  options: CommonOptions & { json?: boolean },
): Promise<number> {
  const notes = await collectNotes(paths);
  const fixed =
    options.config !== undefined || process.env['VAULTD_CONFIG'] || options.vault !== undefined;
  const sessions = new Map<string, { session: PackSession; context: CheckContext }>();
  let builtin: CheckContext | undefined;
  const findings: CheckFinding[] = [];
  let warnedNoConfig = false;
  try {
    for (const note of notes) {
      const rel = relative(process.cwd(), note);
      const file = rel === '' || rel.startsWith('..') ? note : rel;
      const configFile = fixed ? undefined : nearestConfig(note);
      let context: CheckContext;
      if (fixed || configFile !== undefined) {
        const key = configFile ?? '';
        let entry = sessions.get(key);
        if (entry === undefined) {
          const setup = await loadSetup(
            configFile === undefined ? options : { ...options, config: configFile },
          );
          const session = await startPackSession(setup);
          const { executor, gate } = session.checker();
          entry = {
            session,
            context: {
              executor,
              gate,
              maxBytes: setup.config.max_note_bytes,
              maxCalls: setup.config.max_calls_per_note,
            },
          };
          sessions.set(key, entry);
          // What the daemon would warn about at start with this config, told once, at the
          // first note checked against it.
          for (const message of session.warnings) {
            findings.push({
              file,
              line: 1,
              column: 1,
              severity: 'warning',
              code: 'CONFIG',
              message,
            });
          }
        }
        context = entry.context;
      } else {
        if (builtin === undefined) {
          const registry = builtinRegistry();
          const gate = new ApprovalGate();
          builtin = {
            executor: new Executor(registry, { gate }),
            gate,
            maxBytes: CONFIG_DEFAULTS.max_note_bytes,
            maxCalls: CONFIG_DEFAULTS.max_calls_per_note,
          };
        }
        context = builtin;
        if (!warnedNoConfig) {
          warnedNoConfig = true;
          findings.push({
            file,
            line: 1,
            column: 1,
            severity: 'warning',
            code: 'NO_CONFIG',
            message:
              'no vaultd.yaml in this folder or above it, and no --config or $VAULTD_CONFIG: checked against the built-in tools with no policy; a vault may decide otherwise',
          });
        }
      }
      for (const finding of await checkNote(note, file, context)) findings.push(finding);
    }
  } finally {
    for (const { session } of sessions.values()) await session.stop().catch(() => undefined);
  }
  const sorted = sortFindings(findings);
  if (options.json) {
    process.stdout.write(`${printableJson(sorted)}\n`);
  } else {
    for (const f of sorted) {
      process.stdout.write(
        `${printable(`${f.file}:${f.line}:${f.column}: ${f.severity} ${f.code} ${f.message}`)}\n`,
      );
    }
    const errors = sorted.filter((f) => f.severity === 'error').length;
    const calls = new Set(
      sorted.filter((f) => f.callId !== undefined).map((f) => `${f.file}\n${f.callId}`),
    ).size;
    process.stdout.write(`${notes.length} note(s), ${calls} call(s), ${errors} error(s)\n`);
  }
  return sorted.some((f) => f.severity === 'error') ? EXIT.failure : EXIT.ok;
}
