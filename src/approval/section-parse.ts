import { NoteLines, type Fence } from './markdown-lines.ts';
import {
  APPROVAL_HEADING,
  PENDING_CALL_KEY,
  type ApprovalSectionRead,
  type DecisionKind,
  type PendingDecision,
} from './section-types.ts';

// No `[ \t]*` before the label's `(.*)`: a line the `(.*)$` cannot end (a U+2028 in it) had it
// give back one blank at a time, each retried to the end, time growing with the square of the
// line (64 KiB: 7.8 s). The label's leading blanks are trimmed after.
const TASK = /^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[(.)\](.*)$/u;
const REASON = /^[ \t]*reason[ \t]*:(.*)$/i;
const TOOL_NAME = /^[a-z][a-z0-9_]*$/;

/**
 * Read the decisions in a note's `## Approval` section(s): per call its block (possibly edited),
 * ticked boxes (`[x]` or `[X]`) and reason. A decision is `none` whenever anything is ambiguous
 * (both approve and reject ticked, a broken or duplicated block, a changed id or tool, a box of
 * another call), with problems saying what to fix: a decision is never given to the wrong call.
 * Text inside fenced code, block quotes and callouts is never read as a box or heading. LF and
 * CRLF line endings are both fine.
 * @param text the whole note.
 * @param maxCalls calls (level-3 headings, with a readable id or not) read at most; past them the
 *   section gets one problem and nothing more is read (a note waits on at most
 *   `max_calls_per_note` calls: 4 MB of fake calls made 100,000 decisions, which the note worker
 *   copied to the main thread at every look at the note, and 4 MB of `### x` lines 700,000 calls
 *   to read).
 */
export function readApprovalSection(text: string, maxCalls = Infinity): ApprovalSectionRead {
  // Most notes have no Approval section: they are not read line by line (on the main thread, a
  // large note would stall everything else for as long as that takes).
  if (!/approval/i.test(text)) return { found: false, decisions: new Map(), problems: [] };
  const lines = new NoteLines(text);
  const decisions = new Map<string, PendingDecision>();
  const duplicated = new Set<string>();
  const problems: string[] = [];
  // The first problems and a count of the rest: 4 MB of `### x` lines made 700,000 of them, which
  // the note worker then copied to the main thread at every look at the note (about 150 ms).
  let unlisted = 0;
  const problem = (text: string): void => {
    if (problems.length < MAX_SECTION_PROBLEMS) problems.push(text);
    else unlisted++;
  };
  let found = false;
  let calls = 0;
  let capped = false;
  // One call: its level-3 heading's line and the lines after it up to `end`; false past the cap.
  const readCall = (heading: number, end: number, unclosed: string | null): boolean => {
    if (calls++ >= maxCalls) {
      capped = true;
      return false;
    }
    const headingText = lines.heading(heading)?.text ?? '';
    const decision = readChunk(lines, headingText, heading + 1, end);
    if (decision === null) {
      problem(
        `the call under "### ${headingText.slice(0, 200)}" has no readable id; restore its heading or json block`,
      );
      return true;
    }
    const withSection = unclosed === null ? decision : spoil(decision, unclosed);
    if (decisions.has(decision.id) || duplicated.has(decision.id)) {
      duplicated.add(decision.id);
      decisions.set(
        decision.id,
        spoil(
          withSection,
          'the call appears more than once in the Approval section; delete the copy',
        ),
      );
    } else {
      decisions.set(decision.id, withSection);
    }
    return true;
  };
  reading: for (const section of lines.sections(APPROVAL_HEADING)) {
    found = true;
    let unclosed: string | null = null;
    if (lines.hasUnclosedFence(section.start, section.end)) {
      unclosed = 'a code fence in the Approval section is not closed; add its closing ``` line';
      problem(unclosed);
    }
    // A call is a level-3 heading and the lines up to the next one or the section's end; lines
    // before the first are not read.
    let heading: number | undefined;
    for (const next of lines.headingLines(3, section.start, section.end)) {
      if (heading !== undefined && !readCall(heading, next, unclosed)) break reading;
      heading = next;
    }
    if (heading !== undefined && !readCall(heading, section.end, unclosed)) break;
  }
  if (unlisted > 0) problems.push(`and ${unlisted} more problems like these`);
  // Said last, whatever came before it: a count of other problems must not hide it.
  if (capped)
    problems.push(
      `the Approval section holds more than ${maxCalls} calls, more than a note can wait on; the rest were not read`,
    );
  return { found, decisions, problems };
}

/** Problems of an Approval section listed at most. */
const MAX_SECTION_PROBLEMS = 20;

/**
 * The decisions of a note's Approval section by call id; see {@link readApprovalSection}.
 * @param text the whole note.
 */
export function parseApprovalSection(text: string): Map<string, PendingDecision> {
  return readApprovalSection(text).decisions;
}

// `<tool> · <code span holding the id>`, as rendered; anything else leaves the id to the block.
function parseCallHeading(text: string): { headingName: string | null; headingId: string | null } {
  // `·[ \t](.*)$`, the rest's blanks trimmed after: `·[ \t]+(.*)$` gave its blanks back one at a
  // time when `(.*)$` could not end the line (a U+2028), time growing with their square.
  const match = /^(\S+)[ \t]+·[ \t](.*)$/u.exec(text);
  if (match === null) return { headingName: null, headingId: null };
  const name = match[1] ?? '';
  const rest = trimBlanksStart(match[2] ?? '');
  const escaped = /^escaped[ \t]+(.*)$/.exec(rest);
  let id = readCodeSpan(escaped?.[1] ?? rest);
  if (escaped !== null && id !== null) {
    try {
      const parsed: unknown = JSON.parse(id);
      id = typeof parsed === 'string' ? parsed : null;
    } catch {
      id = null;
    }
  }
  return { headingName: TOOL_NAME.test(name) ? name : null, headingId: id };
}

/**
 * The content of a code span that is the whole text: as many backticks at its end as at its start
 * (the most both have, leaving something between). Counted, not matched with `/^(`+)(.+?)\1$/`:
 * that took time growing with the cube of the run (20,000 backticks in an agent's heading held
 * the daemon for three minutes).
 */
function readCodeSpan(text: string): string | null {
  let lead = 0;
  while (text.charCodeAt(lead) === 96) lead++;
  let trail = 0;
  while (trail < text.length && text.charCodeAt(text.length - 1 - trail) === 96) trail++;
  const ticks = Math.min(lead, trail, Math.floor((text.length - 1) / 2));
  if (ticks < 1) return null;
  const content = text.slice(ticks, text.length - ticks);
  const padded =
    content.length >= 2 &&
    content.startsWith(' ') &&
    content.endsWith(' ') &&
    content.trim() !== '';
  return padded ? content.slice(1, -1) : content;
}

interface BlockRead {
  readonly id: string | null;
  readonly name: string | null;
  readonly arguments: Record<string, unknown> | null;
  readonly requestedAt: string | null;
  readonly nonce: string | null;
  readonly problem: string | null;
}

/**
 * Read one call's decision.
 * @param lines the note's lines.
 * @param heading the text of the call's heading.
 * @param from its first line after the heading.
 * @param to the line after its last.
 * @returns null when the call has no readable id.
 */
function readChunk(
  lines: NoteLines,
  heading: string,
  from: number,
  to: number,
): PendingDecision | null {
  const { headingName, headingId } = parseCallHeading(heading);
  const problems: string[] = [];
  const fences = new Set<Fence>();
  const boxes = { approve: [] as boolean[], reject: [] as boolean[], always: [] as boolean[] };
  let reason: string | undefined;
  let scope: string | null = null;
  for (let i = from; i < to; i++) {
    const fence = lines.fence(i);
    if (fence !== null) {
      if (!lines.quoted(i) && /^json$/i.test(fence.info)) fences.add(fence);
      continue;
    }
    if (lines.quoted(i) || lines.heading(i) !== null || lines.headingPart(i)) continue;
    const text = lines.text(i);
    const task = TASK.exec(text);
    const boxLabel = task === null ? '' : trimBlanksStart(task[2] ?? '');
    if (task !== null) {
      const ticked = task[1] === 'x' || task[1] === 'X';
      const label = boxLabel.replace(/[*~`]/g, '').replace(/\s+/g, ' ').trim().toLowerCase();
      if (label === 'approve') boxes.approve.push(ticked);
      else if (label === 'reject') boxes.reject.push(ticked);
      else if (label === 'always allow' || label.startsWith('always allow ')) {
        boxes.always.push(ticked);
        // The rest of the label is the tool, or a rule scoping the grant: `tool(param:glob)`.
        // Only code-span backticks go: a rule's globs need their `*`.
        const raw = trimEmphasis(boxLabel.replace(/`/g, ''))
          .trim()
          .slice('always allow'.length)
          .trim();
        const tool = raw.includes('(') ? raw.slice(0, raw.indexOf('(')).trim() : raw;
        if (tool !== '' && headingName !== null && tool !== headingName) {
          problems.push(
            `the box "always allow ${tool}" does not belong to this ${headingName} call; delete it`,
          );
        } else if (raw.includes('(') && ticked) {
          scope = raw;
        }
      }
      continue;
    }
    const reasonLine = REASON.exec(text);
    const said = reasonLine?.[1]?.trim() ?? '';
    if (reason === undefined && said !== '') reason = said;
  }
  const block = readBlock(fences);
  const id = headingId ?? block.id;
  if (id === null) return null;
  if (block.problem !== null) problems.push(block.problem);
  if (headingId !== null && block.id !== null && block.id !== headingId) {
    problems.push(
      `the id in the ${PENDING_CALL_KEY} block was changed to "${block.id}"; change it back to "${headingId}"`,
    );
  }
  if (headingName !== null && block.name !== null && block.name !== headingName) {
    problems.push(
      `the tool name in the ${PENDING_CALL_KEY} block was changed to "${block.name}"; a pending call's tool cannot be changed, change it back to "${headingName}"`,
    );
  }
  for (const kind of ['approve', 'reject', 'always'] as const) {
    if (boxes[kind].length > 1)
      problems.push(`the call has more than one "${labelOf(kind)}" box; delete the extra one`);
  }
  const approve = boxes.approve.some(Boolean);
  const reject = boxes.reject.some(Boolean);
  const always = boxes.always.some(Boolean);
  if (reject && approve) problems.push('both approve and reject are ticked; untick one');
  if (reject && always) problems.push('both always allow and reject are ticked; untick one');
  let decision: DecisionKind = 'none';
  if (problems.length === 0)
    decision = always ? 'always' : approve ? 'approve' : reject ? 'reject' : 'none';
  return {
    id,
    name: block.name ?? headingName,
    arguments: block.arguments,
    requestedAt: block.requestedAt,
    nonce: block.nonce,
    ...(scope === null ? {} : { grantScope: scope }),
    decision,
    ...(reason === undefined ? {} : { reason }),
    problems,
  };
}

const NO_BLOCK = { id: null, name: null, arguments: null, requestedAt: null, nonce: null };
// Made once: 4 MB of headings without a block made as many of these as headings.
const MISSING_BLOCK: BlockRead = {
  ...NO_BLOCK,
  problem: `the ${PENDING_CALL_KEY} json block of this call is missing; restore it`,
};
const EXTRA_BLOCKS: BlockRead = {
  ...NO_BLOCK,
  problem: `this call has more than one json block; keep only its ${PENDING_CALL_KEY} block`,
};

function readBlock(fences: ReadonlySet<Fence>): BlockRead {
  if (fences.size === 0) return MISSING_BLOCK;
  if (fences.size > 1) return EXTRA_BLOCKS;
  const none = NO_BLOCK;
  let data: unknown;
  try {
    data = JSON.parse(fences.values().next().value?.value ?? '');
  } catch (error) {
    return {
      ...none,
      problem: `the ${PENDING_CALL_KEY} block is not valid JSON (${(error as Error).message}); fix it, then tick again`,
    };
  }
  const call = isRecord(data) ? data[PENDING_CALL_KEY] : undefined;
  if (!isRecord(call)) {
    return {
      ...none,
      problem: `the json block must hold {"${PENDING_CALL_KEY}": {...}}; restore its shape`,
    };
  }
  const id = typeof call['id'] === 'string' ? call['id'] : null;
  const name = typeof call['name'] === 'string' ? call['name'] : null;
  const requestedAt = typeof call['requested_at'] === 'string' ? call['requested_at'] : null;
  const nonce = typeof call['nonce'] === 'string' ? call['nonce'] : null;
  const parameters = call['parameters'] ?? call['arguments'];
  if (!isRecord(parameters)) {
    return {
      id,
      name,
      arguments: null,
      requestedAt,
      nonce,
      problem: `"parameters" in the ${PENDING_CALL_KEY} block must be an object`,
    };
  }
  if (id === null || name === null) {
    return {
      id,
      name,
      arguments: parameters,
      requestedAt,
      nonce,
      problem: `the ${PENDING_CALL_KEY} block lost its "id" or "name"; restore them`,
    };
  }
  return { id, name, arguments: parameters, requestedAt, nonce, problem: null };
}

function spoil(decision: PendingDecision, problem: string): PendingDecision {
  return { ...decision, decision: 'none', problems: [...decision.problems, problem] };
}

function labelOf(kind: 'approve' | 'reject' | 'always'): string {
  return kind === 'always' ? 'always allow' : kind;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `text` without the spaces and tabs it starts with. */
function trimBlanksStart(text: string): string {
  let at = 0;
  while (text.charCodeAt(at) === 32 || text.charCodeAt(at) === 9) at++;
  return at === 0 ? text : text.slice(at);
}

/**
 * `text` without the `*`, `~` and `_` at either end (emphasis around a box's label), by counting:
 * `/^[*~_]+|[*~_]+$/g` tried the end at every place of a run inside the label, time growing with
 * its square.
 */
function trimEmphasis(text: string): string {
  const mark = (code: number): boolean => code === 42 || code === 126 || code === 95;
  let start = 0;
  while (start < text.length && mark(text.charCodeAt(start))) start++;
  let end = text.length;
  while (end > start && mark(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}
