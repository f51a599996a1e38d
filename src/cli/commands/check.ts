import { relative } from 'node:path';
import { compilePolicy, decideCall, GrantStore, readAllowedTools } from '../../approval/index.ts';
import { ConfigError } from '../../config/index.ts';
import { Executor } from '../../execute/index.ts';
import { parseNote, readFrontMatter } from '../../note/index.ts';
import { readNote } from '../../pipeline/read-note.ts';
import type { ToolRegistry } from '../../protocol/index.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { builtinRegistry, loadSetup } from '../setup.ts';

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

const DEFAULT_MAX_BYTES = 5 * 1024 * 1024;

/**
 * Find every call in the notes and say what would happen to it, without running anything.
 * @param files paths of notes.
 * @param registry the tools.
 * @param policyContext policy and grants when a config was given.
 */
export async function checkNotes(
  files: readonly string[],
  registry: ToolRegistry,
  policyContext?: {
    policy: ReturnType<typeof compilePolicy>;
    grants: GrantStore;
    maxBytes: number;
  },
): Promise<CheckFinding[]> {
  const executor = new Executor(registry, {});
  const findings: CheckFinding[] = [];
  for (const path of files) {
    const rel = relative(process.cwd(), path);
    const file = rel === '' || rel.startsWith('..') ? path : rel;
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
    const read = await readNote(path, policyContext?.maxBytes ?? DEFAULT_MAX_BYTES);
    if (read.kind === 'gone') {
      at(0, 0, 'error', 'ENOENT', 'no such file');
      continue;
    }
    if (read.kind !== 'text') {
      const code =
        read.kind === 'too_large'
          ? 'NOTE_TOO_LARGE'
          : read.kind === 'not_a_file'
            ? 'NOT_A_FILE'
            : 'NOTE_NOT_TEXT';
      at(1, 1, 'error', code, `cannot check this file: ${read.kind.replace('_', ' ')}`);
      continue;
    }
    const front = readFrontMatter(read.text);
    for (const d of front.diagnostics)
      at(d.start.line, d.start.column, d.severity, String(d.code), d.message);
    const parsed = parseNote(read.text);
    for (const d of parsed.diagnostics) {
      at(
        d.start.line,
        d.start.column,
        d.severity,
        String(d.code),
        d.message,
        d.callId === undefined ? {} : { callId: d.callId },
      );
    }
    const allowed = front.data['allowed_tools'];
    for (const call of parsed.calls) {
      const where = [call.start.line, call.start.column] as const;
      const extra = { callId: call.id, tool: call.name };
      if (parsed.results.has(call.id)) {
        at(
          ...where,
          'ok',
          'HAS_RESULT',
          `${call.name} (${call.id}) already has a result; it will not run again`,
          extra,
        );
        continue;
      }
      const checked = executor.check({ id: call.id, name: call.name, arguments: call.arguments });
      if (!checked.ok) {
        at(...where, 'error', checked.error.code, checked.error.message, extra);
        continue;
      }
      if (policyContext === undefined) {
        const verb = checked.tool.safety === 'dangerous' ? 'would ask a human first' : 'would run';
        at(
          ...where,
          'ok',
          'WOULD_RUN',
          `${call.name} (${call.id}) [${checked.tool.safety}] ${verb}`,
          extra,
        );
        continue;
      }
      const verdict = decideCall({
        call: { name: call.name, arguments: checked.args },
        tool: checked.tool,
        policy: policyContext.policy,
        grants: policyContext.grants,
        allowedTools: readAllowedTools(allowed).allowed,
      });
      if (verdict.action === 'deny')
        at(...where, 'error', 'PERMISSION_DENIED', verdict.message, extra);
      else if (verdict.action === 'ask')
        at(
          ...where,
          'ok',
          'WOULD_ASK',
          `${call.name} (${call.id}) [${checked.tool.safety}] would ask a human first: ${verdict.reason}`,
          extra,
        );
      else
        at(
          ...where,
          'ok',
          'WOULD_RUN',
          `${call.name} (${call.id}) [${checked.tool.safety}] would run (${verdict.approvedBy})`,
          extra,
        );
    }
  }
  return findings;
}

/**
 * `vaultd check FILE…`: print findings as `file:line:column severity code message`; exit 1 when
 * any is an error.
 * @param files the notes.
 * @param options common options and `--json`.
 */
export async function runCheck(
  files: readonly string[],
  options: CommonOptions & { json?: boolean },
): Promise<number> {
  let registry: ToolRegistry;
  let policyContext;
  try {
    const setup = await loadSetup(options);
    registry = setup.registry;
    policyContext = {
      policy: compilePolicy(setup.config.policy),
      grants: await GrantStore.open(`${setup.config.vault}/.vaultd`),
      maxBytes: setup.config.max_note_bytes,
    };
  } catch (error) {
    // Without a vault there is no policy to apply: check against the tools alone.
    if (!(error instanceof ConfigError) || options.config !== undefined) throw error;
    registry = builtinRegistry();
  }
  const findings = await checkNotes(files, registry, policyContext);
  if (options.json) {
    process.stdout.write(`${JSON.stringify(findings, null, 2)}\n`);
  } else {
    for (const f of findings) {
      process.stdout.write(
        `${f.file}:${f.line}:${f.column}  ${f.severity.padEnd(7)} ${f.code.padEnd(17)} ${f.message}\n`,
      );
    }
    const errors = findings.filter((f) => f.severity === 'error').length;
    const calls = findings.filter((f) => f.callId !== undefined).length;
    process.stdout.write(`${files.length} note(s), ${calls} call(s), ${errors} error(s)\n`);
  }
  return findings.some((f) => f.severity === 'error') ? EXIT.failure : EXIT.ok;
}
