import { longestBacktickRun, shellWord } from '../note/escape.ts';
import { PENDING_CALL_KEY, type PendingCall } from './section-types.ts';

/** Options of {@link renderApprovalSection}. */
export interface ApprovalSectionOptions {
  /** Folder name shown for "approve all by moving"; defaults to `Approved`. */
  readonly approvedFolder?: string;
  /** Folder name shown for "reject all by moving"; defaults to `Rejected`. */
  readonly rejectedFolder?: string;
  /** Problems to show under a call (e.g. why the last decision could not be read), by call id. */
  readonly problems?: ReadonlyMap<string, readonly string[]>;
  /**
   * False when ticks and moves decide nothing (`approval.vault_decisions: false`): the section
   * then has no boxes and tells the human the `vaultd approve`/`vaultd reject` commands and the
   * HTTP API instead. Default true.
   */
  readonly vaultDecisions?: boolean;
}

/**
 * Render the body of the `## Approval` section (without the heading) of a note whose calls wait
 * for a human: an intro callout, then per call a `###` heading with tool and id, why it waits, a
 * preview in a callout (inside a fence longer than any backtick run in it, so nothing in it is
 * ever read as markdown or as a block), an editable `json` block `{"pending_call": {...}}`, the
 * boxes `approve`, `reject`, `always allow <tool>`, and a `Reason:` line; without vault decisions,
 * the commands that decide the call instead of the boxes.
 * @param pending the waiting calls, in note order.
 * @param options folder names, problems to show and whether the vault decides; see
 *   {@link ApprovalSectionOptions}.
 */
export function renderApprovalSection(
  pending: readonly PendingCall[],
  options: ApprovalSectionOptions = {},
): string {
  const out = sectionHead(pending, options);
  for (const call of pending) out.push('', ...renderCall(call, options));
  return `${out.join('\n')}\n`;
}

/**
 * {@link renderApprovalSection}, letting the event loop run between calls: a note may wait on
 * thousands of them (10,000 took 60 ms in one piece).
 * @param pending the calls waiting, in block order.
 * @param options as for {@link renderApprovalSection}.
 * @param pause called before each call; rendering waits for the promise it returns, if any.
 */
export async function renderApprovalSectionSliced(
  pending: readonly PendingCall[],
  options: ApprovalSectionOptions,
  pause: () => Promise<void> | undefined,
): Promise<string> {
  const out = sectionHead(pending, options);
  for (const call of pending) {
    await pause();
    out.push('');
    for (const line of renderCall(call, options)) out.push(line);
  }
  return `${out.join('\n')}\n`;
}

/** The first line of vaultd's Approval section: a section without it is not vaultd's. */
export const APPROVAL_MARKER = '> [!question] vaultd needs a decision';

function sectionHead(pending: readonly PendingCall[], options: ApprovalSectionOptions): string[] {
  const count = pending.length === 1 ? '1 call below waits' : `${pending.length} calls below wait`;
  if (options.vaultDecisions === false) {
    return [
      APPROVAL_MARKER,
      `> ${count} for you. Decisions in the vault are turned off (\`approval.vault_decisions: false\`): ticking a box, editing a call or moving this note decides nothing.`,
      '> Decide from a shell in the vault with the commands under each call, or through the HTTP API (`POST /approvals/<request id>/approve` or `/reject`). `vaultd approve <this note>` (or `vaultd reject <this note> --reason TEXT`) decides every call below at once; `vaultd approvals` lists every call that waits.',
    ];
  }
  const approved = inlineCode(`${options.approvedFolder ?? 'Approved'}/`);
  const rejected = inlineCode(`${options.rejectedFolder ?? 'Rejected'}/`);
  return [
    APPROVAL_MARKER,
    `> ${count} for you. Under each call tick **approve**, **reject** or **always allow**; or move this note to ${approved} to approve every call, or to ${rejected} to reject every call.`,
    '> To change what a call does, edit the parameters in its json block, then tick approve. To tell the agent why you reject a call, write it after "Reason:".',
  ];
}

function renderCall(call: PendingCall, options: ApprovalSectionOptions): string[] {
  // An id with control characters (a newline would end the heading) is shown JSON-escaped.
  const id = /^[^\p{Cc}]+$/u.test(call.id)
    ? inlineCode(call.id)
    : `escaped ${inlineCode(JSON.stringify(call.id))}`;
  const facts = [`Requested ${call.requestedAt}`];
  if (call.expiresAt !== undefined) facts.push(`rejected as expired after ${call.expiresAt}`);
  if (call.reason !== undefined && call.reason !== '') facts.push(inert(oneLine(call.reason)));
  const out = [`### ${call.name} · ${id}`, '', `${facts.join(' · ')}.`];
  const problems = [...(options.problems?.get(call.id) ?? []), ...(call.problems ?? [])];
  if (problems.length > 0) {
    out.push(
      '',
      '> [!warning] Your last decision could not be read',
      ...problems.map((p) => `> - ${inert(oneLine(p))}`),
    );
  }
  out.push('', ...renderPreview(call.preview, call.previewKind));
  const block = JSON.stringify(
    {
      [PENDING_CALL_KEY]: {
        id: call.id,
        name: call.name,
        parameters: call.arguments,
        requested_at: call.requestedAt,
        ...(call.nonce === undefined ? {} : { nonce: call.nonce }),
      },
    },
    null,
    2,
  );
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(block) + 1));
  out.push('', `${fence}json`, block, fence, '');
  if (options.vaultDecisions === false) out.push(...renderCommands(call));
  else
    out.push(
      '- [ ] approve',
      '- [ ] reject',
      ...(call.alwaysRule === null ? [] : [`- [ ] always allow ${alwaysLabel(call)}`]),
      '',
      'Reason: ',
    );
  return out;
}

// What decides a call when ticks do not: the CLI with the call's request id (or, without one,
// the note and the call id).
function renderCommands(call: PendingCall): string[] {
  const target =
    call.nonce === undefined ? `<this note> --call ${shellWord(call.id)}` : shellWord(call.nonce);
  return [
    `- approve: ${inlineCode(`vaultd approve ${target}`)}`,
    ...(call.alwaysRule === null
      ? []
      : [
          call.alwaysRule === undefined
            ? `- always allow ${call.name}: ${inlineCode(`vaultd approve ${target} --always`)}`
            : `- always allow ${alwaysLabel(call)}: ${inlineCode(`vaultd approve ${target} --scope ${shellWord(call.alwaysRule)}`)}`,
        ]),
    `- reject: ${inlineCode(`vaultd reject ${target} --reason 'why'`)}`,
  ];
}

/** A word the shell reads as itself: single-quoted unless plainly safe. */
function renderPreview(preview: string | undefined, kind?: 'text' | 'diff'): string[] {
  if (preview === undefined || preview.trim() === '') {
    return [
      '> [!example] Preview',
      '> No preview for this tool: the parameters below are the whole call.',
    ];
  }
  const text = dropTrailingNewlines(preview.replace(/\r\n?/g, '\n'));
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(text) + 1));
  const lang = kind ?? (/^(?:diff |--- |\+\+\+ |@@ )/.test(text) ? 'diff' : 'text');
  return [
    '> [!example] Preview',
    `> ${fence}${lang}`,
    ...text.split('\n').map((line) => (line === '' ? '>' : `> ${line}`)),
    `> ${fence}`,
  ];
}

/**
 * What an "always allow" box names: the tool, or the rule pinning this call's values as code (the
 * reader drops a code span's backticks), since an agent's value is no markdown: `echo %%` opened
 * an Obsidian comment that hid the rest of the section, the next calls' previews and boxes
 * included, from a human told to approve them all by moving the note (review finding).
 */
function alwaysLabel(call: PendingCall): string {
  return call.alwaysRule === undefined || call.alwaysRule === null
    ? call.name
    : inlineCode(call.alwaysRule);
}

/**
 * Text holding names an agent chose (a note's, a file's) made unable to open an Obsidian comment
 * or math block: `%%` and `$$` escaped.
 */
function inert(text: string): string {
  return text.replace(/%%/g, '\\%\\%').replace(/\$\$/g, '\\$\\$');
}

function inlineCode(text: string): string {
  const ticks = '`'.repeat(longestBacktickRun(text) + 1);
  const pad =
    text.startsWith('`') || text.endsWith('`') || (text.startsWith(' ') && text.endsWith(' '))
      ? ' '
      : '';
  return `${ticks}${pad}${text}${pad}${ticks}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/**
 * `text` without the line breaks it ends with, found back from the end: `/\n+$/` tried every
 * place of a run inside the text (a preview of 30,000 CRs), time growing with its square.
 */
function dropTrailingNewlines(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 10) end--;
  return text.slice(0, end);
}
