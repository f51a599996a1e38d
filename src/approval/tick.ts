import { scanLines } from './markdown-lines.ts';
import { readApprovalSection } from './section.ts';
import { APPROVAL_HEADING } from './section-types.ts';

/** What {@link tickDecision} did. */
export interface TickOutcome {
  readonly text: string;
  /** Ids of the calls whose box was ticked. */
  readonly ticked: readonly string[];
}

/**
 * Tick the `approve` or `reject` box of pending calls in a note's Approval section, as a human
 * would in Obsidian (used by `vaultd approve` / `vaultd reject`). The other box of the call is
 * cleared, and a reason is written after `Reason:` when given.
 * @param text the note.
 * @param decision which box to tick.
 * @param options `callId` to decide one call only; `reason` for a rejection.
 */
export function tickDecision(
  text: string,
  decision: 'approve' | 'reject',
  options: { callId?: string; reason?: string } = {},
): TickOutcome {
  const read = readApprovalSection(text);
  const wanted = new Set(
    [...read.decisions.keys()].filter(
      (id) => options.callId === undefined || id === options.callId,
    ),
  );
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  // The same reading of the note as the one decisions are read with: headings, code and quotes
  // are what CommonMark says they are, so a box is ticked only where it will be read.
  const scanned = scanLines(text);
  const lines = scanned.map((line) => line.text);
  const ticked: string[] = [];
  let inSection = false;
  let current: string | undefined;
  for (const line of scanned) {
    const heading = line.heading;
    if (heading !== null && heading.level <= 2) {
      inSection =
        heading.level === 2 && heading.text.toLowerCase() === APPROVAL_HEADING.toLowerCase();
      current = undefined;
      continue;
    }
    if (!inSection) continue;
    if (heading !== null && heading.level === 3) {
      current = [...wanted].find(
        (id) => heading.text.includes(`\`${id}\``) || heading.text.includes(JSON.stringify(id)),
      );
      continue;
    }
    if (current === undefined || line.fence !== null || line.quoted || line.headingPart) continue;
    const i = line.index;
    const box = /^(\s*[-*+] \[)[ xX](\] )(approve|reject)\s*$/.exec(line.text);
    if (box) {
      lines[i] = `${box[1]}${box[3] === decision ? 'x' : ' '}${box[2]}${box[3]}`;
      if (box[3] === decision && !ticked.includes(current)) ticked.push(current);
      continue;
    }
    if (options.reason !== undefined && /^Reason:/.test(line.text)) {
      lines[i] = `Reason: ${options.reason.replace(/[\r\n]+/g, ' ')}`;
    }
  }
  return { text: lines.join(eol), ticked };
}
