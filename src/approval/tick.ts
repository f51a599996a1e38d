import { readApprovalSection } from './section.ts';

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
  const lines = text.split(/\r?\n/);
  const ticked: string[] = [];
  let inSection = false;
  let current: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (/^## /.test(line)) {
      inSection = /^## Approval\s*$/.test(line);
      current = undefined;
      continue;
    }
    if (!inSection) continue;
    if (/^### /.test(line)) {
      current = [...wanted].find(
        (id) => line.includes(`\`${id}\``) || line.includes(JSON.stringify(id)),
      );
      continue;
    }
    if (current === undefined) continue;
    const box = /^(\s*[-*+] \[)[ xX](\] )(approve|reject)\s*$/.exec(line);
    if (box) {
      lines[i] = `${box[1]}${box[3] === decision ? 'x' : ' '}${box[2]}${box[3]}`;
      if (box[3] === decision && !ticked.includes(current)) ticked.push(current);
      continue;
    }
    if (options.reason !== undefined && /^Reason:/.test(line)) {
      lines[i] = `Reason: ${options.reason.replace(/[\r\n]+/g, ' ')}`;
    }
  }
  return { text: lines.join(eol), ticked };
}
