import type { ToolMetrics } from '../execute/index.ts';
import type { ToolResult } from '../protocol/types.ts';
import { escapeMarkdownTitle } from '../note/escape.ts';
import { ARCHIVE_STATES, type VaultSnapshot } from './vault-snapshot.ts';

/** One finished call, for the dashboard's list of recent calls. */
export interface RecentCall {
  readonly note: string;
  readonly tool: string;
  readonly callId: string;
  readonly status: ToolResult['status'];
  readonly code: string | null;
  readonly ms: number;
  readonly at: string;
}

/** What the dashboard shows. */
export interface DashboardInput {
  readonly snapshot: VaultSnapshot;
  readonly recent: readonly RecentCall[];
  readonly tools: Readonly<Record<string, ToolMetrics>>;
  /** The pending folder's configured name. */
  readonly pendingFolder: string;
  readonly state: string;
  readonly queueDepth: number;
}

// Names come from agents: every one is escaped as text, never markup.
const cell = (text: string): string => escapeMarkdownTitle(text, 200);
const code = (text: string): string =>
  /^[a-z][a-z0-9_]*$/.test(text) ? `\`${text}\`` : escapeMarkdownTitle(text, 100);
/**
 * A link to a note: a wiki link for a plain name, a markdown link with the path percent-encoded
 * for a name holding characters a wiki link cannot (`]]`, `|`, `#`, `^`, `[`, line breaks) or that
 * Obsidian reads inside one (`%%` opens a comment, `$` math).
 */
const link = (folder: string, note: string): string => {
  const name = note.replace(/\.md$/, '');
  // `%%` would open an Obsidian comment hiding the rest of the page, `$` math: such names are
  // escaped text in a markdown link.
  // eslint-disable-next-line no-control-regex -- control characters end a wiki link too
  if (/^[^\][|#^\r\n\u0000-\u001f`<>%$]+$/u.test(name)) return `[[${folder}/${name}]]`;
  return `[${escapeMarkdownTitle(name, 100)}](${encodeURI(`${folder}/${note}`).replace(/[()[\]#]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)})`;
};

/**
 * The folder and the file name of a note's vault-relative path as vaultd recorded it: the pending
 * folder (its configured name may hold `/`), or the folder before the last `/` (In_Progress/
 * while vaultd looks at the note again).
 */
const splitPath = (path: string, pendingFolder: string): [string, string] => {
  if (path.startsWith(`${pendingFolder}/`))
    return [pendingFolder, path.slice(pendingFolder.length + 1)];
  const slash = path.lastIndexOf('/');
  return [path.slice(0, Math.max(slash, 0)), path.slice(slash + 1)];
};

/** Pending notes listed on the Dashboard at most. */
const MAX_PENDING_NOTES = 100;

/**
 * Render `Dashboard.md`: counts per folder, pending approvals as links, recent calls and per-tool
 * figures, so an Obsidian user sees the daemon's state without leaving the vault.
 * @param input the figures.
 */
export function renderDashboard(input: DashboardInput): string {
  const { snapshot } = input;
  const lines = [
    '---',
    'vaultd: dashboard',
    `updated: ${snapshot.at}`,
    '---',
    '# vaultd',
    '',
    `Daemon **${input.state}**, ${input.queueDepth} note(s) queued. Rewritten by vaultd every few seconds; edits here are lost.`,
    '',
    '## Notes',
    '',
    '| folder | notes |',
    '| --- | ---: |',
    ...Object.entries(snapshot.notes).map(([state, n]) => `| ${state} | ${n} |`),
    ...ARCHIVE_STATES.filter((state) => !(state in snapshot.notes)).map(
      (state) => `| ${state} | counted a minute after start |`,
    ),
    '',
    '## Waiting for you',
    '',
  ];
  // The calls of the request store (see pendingNotes), never what a note's text claims: a note in
  // the pending folder with no pending request is counted above and listed nowhere here.
  if (snapshot.pending.length === 0) lines.push('Nothing waits for a decision.');
  // The page is rewritten every few seconds: a note of 10,000 pending calls is one line with a
  // count per tool, and at most MAX_PENDING_NOTES notes are listed.
  for (const p of snapshot.pending.slice(0, MAX_PENDING_NOTES)) {
    const counts = new Map<string, number>();
    for (const c of p.calls) counts.set(c.tool, (counts.get(c.tool) ?? 0) + 1);
    const calls = [...counts]
      .map(([tool, n]) => (n === 1 ? code(tool) : `${code(tool)} ×${n}`))
      .join(', ');
    lines.push(`- ${link(...splitPath(p.path, input.pendingFolder))}: ${calls}`);
  }
  if (snapshot.pending.length > MAX_PENDING_NOTES) {
    const more = snapshot.pending.length - MAX_PENDING_NOTES;
    lines.push(`- … and ${more} more note(s) in ${escapeMarkdownTitle(input.pendingFolder, 100)}/`);
  }
  lines.push('', '## Recent calls', '');
  if (input.recent.length === 0) lines.push('No call since the daemon started.');
  else {
    lines.push('| finished | tool | status | ms | note |', '| --- | --- | --- | ---: | --- |');
    for (const r of input.recent) {
      const status = r.code === null ? r.status : `${r.status} (${r.code})`;
      lines.push(
        `| ${cell(r.at)} | ${code(r.tool)} | ${status.replace(/[^a-z_ ()A-Z]/g, '')} | ${r.ms} | ${cell(r.note)} |`,
      );
    }
  }
  lines.push('', '## Tools since start', '');
  const tools = Object.entries(input.tools);
  if (tools.length === 0) lines.push('No tool has run yet.');
  else {
    lines.push(
      '| tool | calls | ok | errors | rejected | timeouts | p50 ms | p95 ms |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const [name, m] of tools.sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(
        `| ${code(name)} | ${m.calls} | ${m.successes} | ${m.errors} | ${m.rejections} | ${m.timeouts} | ${Math.round(m.latencyP50Ms)} | ${Math.round(m.latencyP95Ms)} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
