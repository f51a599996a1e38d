// Helpers for the end-to-end tests: what a human does in Obsidian (tick a box, edit a pending
// call, move a note) and what a test reads back (folders, results, the execution log).
import { existsSync } from 'node:fs';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  callBlock,
  makeVault,
  note,
  ROOT,
  startCli,
  STATE_FOLDERS,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';

/** The boxes under a pending call. */
export type Box = 'approve' | 'reject' | 'always allow';

/**
 * Start `vaultd run --config <vault config>` as a child process and wait until it is ready.
 * @param vault the temp vault whose config to use.
 */
export async function startDaemon(vault: TempVault): Promise<DaemonProcess> {
  const daemon = startCli(['run', '--config', vault.configPath]);
  await daemon.ready();
  return daemon;
}

const HOSTILE_MCP = join(ROOT, 'test/fixtures/mcp/hostile-server.mjs');
const FLIP = { name: 'flip', inputSchema: { type: 'object', properties: {} } };

/**
 * A vault whose MCP server `h` (the hostile fixture) lists `tools`, and lists `relist` instead once
 * its safe tool `h_flip` is called (see {@link flipTools}), with a daemon running on it: a server
 * that changes its tools while vaultd runs.
 * @param tools the tool declarations listed first.
 * @param relist the declarations listed after the flip.
 * @param extra config lines before `tools`, and more tool packs' sections.
 */
export async function startChangingMcp(
  tools: readonly object[],
  relist: readonly object[],
  extra: { readonly yaml?: string; readonly packs?: Record<string, unknown> } = {},
): Promise<{ vault: TempVault; daemon: DaemonProcess }> {
  const server = {
    command: process.execPath,
    args: [HOSTILE_MCP],
    env: {
      HOSTILE_TOOLS: JSON.stringify([...tools, FLIP]),
      HOSTILE_RESULTS: JSON.stringify({ flip: { relist: [...relist, FLIP] } }),
    },
    tools: { flip: 'safe' },
  };
  // YAML takes JSON as it is.
  const packs = { mcp: { servers: { h: server } }, ...extra.packs };
  const vault = await makeVault(`${extra.yaml ?? ''}tools: ${JSON.stringify(packs)}\n`);
  return { vault, daemon: await startDaemon(vault) };
}

/**
 * Call the server's `h_flip` through a note and wait until vaultd took the new tool list.
 * @param vault the vault of {@link startChangingMcp}.
 * @param daemon its daemon.
 * @param tool a tool of the new list, whose listing to wait for.
 */
export async function flipTools(
  vault: TempVault,
  daemon: DaemonProcess,
  tool: string,
): Promise<void> {
  await vault.drop('flip.md', note('Flip', callBlock('h_flip', {}, 'flip-1')));
  await waitInFolder(vault, 'flip.md', 'Done');
  // The new list is taken (the first was taken at the start).
  const added = `"pack":"mcp","added":["${tool}"`;
  await waitFor(() => daemon.output().split(added).length > 2, {
    message: 'the new tool list taken',
  });
}

/**
 * Wait until the note `name` is in `folder` and in no other state folder; resolves with its text.
 * @param vault the temp vault.
 * @param name the note's file name.
 * @param folder the state folder, e.g. `Done`.
 * @param timeoutMs deadline; defaults to 15 s.
 */
export async function waitInFolder(
  vault: TempVault,
  name: string,
  folder: string,
  timeoutMs = 15_000,
): Promise<string> {
  let seen: string | undefined;
  await waitFor(
    async () => {
      seen = await vault.whereIs(name);
      return seen === folder;
    },
    { timeoutMs, message: () => `${name} in ${folder} (last seen in ${seen ?? 'no folder'})` },
  );
  return vault.read(folder, name);
}

/**
 * Wait until the note `name` is in `folder` with every call settled: in `Pending_Approval/`
 * that means its Approval section is written.
 * @param vault the temp vault.
 * @param name the note's file name.
 */
export async function waitPending(vault: TempVault, name: string): Promise<string> {
  return waitFor(
    async () => {
      const text = await waitInFolder(vault, name, 'Pending_Approval');
      return text.includes('## Approval') ? text : undefined;
    },
    { message: `${name} pending with an Approval section` },
  );
}

/**
 * The folders (of the SPEC's state folders) that hold a note of this name; a test asserts it
 * is exactly one.
 * @param vault the temp vault.
 * @param name the note's file name.
 */
export async function foldersOf(vault: TempVault, name: string): Promise<string[]> {
  const out: string[] = [];
  for (const folder of STATE_FOLDERS) {
    if ((await vault.list(folder)).includes(name)) out.push(folder);
  }
  return out;
}

/**
 * Edit a note in place, the way an editor saves it (write over the same file, no rename).
 * @param path absolute path of the note.
 * @param edit turns the old text into the new one.
 */
export async function editInPlace(path: string, edit: (text: string) => string): Promise<void> {
  const text = await readFile(path, 'utf8');
  await writeFile(path, edit(text));
}

/**
 * Move a note between folders as a human does in Obsidian's file tree (a rename).
 * @param vault the temp vault.
 * @param name the note's file name.
 * @param from the folder it is in.
 * @param to the folder to move it to.
 */
export async function moveNote(
  vault: TempVault,
  name: string,
  from: string,
  to: string,
): Promise<void> {
  await rename(join(vault.root, from, name), join(vault.root, to, name));
}

/** The lines of the `### tool · \`id\`` part of the Approval section, as [start, end). */
function callRange(lines: readonly string[], callId: string): [number, number] {
  const start = lines.findIndex((l) => l.startsWith('### ') && l.includes(`\`${callId}\``));
  if (start < 0) throw new Error(`no pending call ${callId} in the note`);
  let end = start + 1;
  while (end < lines.length && !/^#{1,3} /.test(lines[end] ?? '')) end++;
  return [start, end];
}

/**
 * Tick one box of a pending call, as a click in Obsidian's reading view does.
 * @param text the note.
 * @param callId the pending call's id.
 * @param box which box.
 */
export function tickBox(text: string, callId: string, box: Box): string {
  const lines = text.split('\n');
  const [start, end] = callRange(lines, callId);
  let done = false;
  for (let i = start; i < end; i++) {
    const line = lines[i] ?? '';
    const m = /^- \[ \] (.*)$/.exec(line);
    if (m !== null && (m[1] === box || (box === 'always allow' && m[1]?.startsWith(box)))) {
      lines[i] = `- [x] ${m[1]}`;
      done = true;
    }
  }
  if (!done) throw new Error(`no unticked "${box}" box for ${callId}`);
  return lines.join('\n');
}

/**
 * Write a reason after the `Reason:` line of a pending call.
 * @param text the note.
 * @param callId the pending call's id.
 * @param reason one line of text.
 */
export function writeReason(text: string, callId: string, reason: string): string {
  const lines = text.split('\n');
  const [start, end] = callRange(lines, callId);
  for (let i = start; i < end; i++) {
    if (/^Reason:/.test(lines[i] ?? '')) lines[i] = `Reason: ${reason}`;
  }
  return lines.join('\n');
}

/**
 * Change the parameters in a pending call's `pending_call` json block, as a human editing the
 * block would.
 * @param text the note.
 * @param callId the pending call's id.
 * @param edit gets the parameters, returns the new ones.
 */
export function editParameters(
  text: string,
  callId: string,
  edit: (parameters: Record<string, unknown>) => Record<string, unknown>,
): string {
  const lines = text.split('\n');
  const [start, end] = callRange(lines, callId);
  const open = lines.findIndex((l, i) => i >= start && i < end && /^`{3,}json$/.test(l));
  if (open < 0) throw new Error(`no json block for ${callId}`);
  const fence = (lines[open] ?? '').replace(/json$/, '');
  const close = lines.findIndex((l, i) => i > open && l === fence);
  const block = JSON.parse(lines.slice(open + 1, close).join('\n')) as {
    pending_call: { parameters: Record<string, unknown> };
  };
  block.pending_call.parameters = edit(block.pending_call.parameters);
  lines.splice(open + 1, close - open - 1, ...JSON.stringify(block, null, 2).split('\n'));
  return lines.join('\n');
}

/** Ids of the calls waiting in a note's Approval section, in order. */
export function pendingIds(text: string): string[] {
  const at = text.indexOf('\n## Approval');
  if (at < 0) return [];
  return [...text.slice(at).matchAll(/^### [a-z0-9_]+ · `([^`]+)`$/gm)].map((m) => m[1] ?? '');
}

/** One line of `Logs/YYYY-MM-DD.jsonl`. */
export interface LogLine {
  call_id: string;
  tool: string;
  note: string;
  parameters: Record<string, unknown>;
  original_parameters?: Record<string, unknown>;
  status: string;
  approved_by: string | null;
  error: { code: string; message: string } | null;
}

/**
 * Every line of the vault's execution logs.
 * @param vault the temp vault.
 */
export async function readLogs(vault: TempVault): Promise<LogLine[]> {
  const dir = join(vault.root, 'Logs');
  if (!existsSync(dir)) return [];
  const out: LogLine[] = [];
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.jsonl')).sort()) {
    for (const line of (await readFile(join(dir, name), 'utf8')).split('\n')) {
      if (line.trim() !== '') out.push(JSON.parse(line) as LogLine);
    }
  }
  return out;
}

/**
 * Lines of a plain-text log file (the test tools' run logs); empty when it does not exist.
 * @param path absolute path.
 */
export async function readLines(path: string): Promise<string[]> {
  if (!existsSync(path)) return [];
  return (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '');
}

/** A call waiting in a note's Approval section, as its `pending_call` block shows it. */
export interface ShownCall {
  id: string;
  name: string;
  parameters: Record<string, unknown>;
}

/** The `pending_call` blocks of a note's Approval section, in order. */
export function shownCalls(text: string): ShownCall[] {
  const at = text.indexOf('\n## Approval');
  if (at < 0) return [];
  const out: ShownCall[] = [];
  for (const m of text.slice(at).matchAll(/^(`{3,})json\n([\s\S]*?)\n\1$/gm)) {
    try {
      const value = JSON.parse(m[2] ?? '') as { pending_call?: ShownCall };
      if (value.pending_call) out.push(value.pending_call);
    } catch {
      // not a pending call
    }
  }
  return out;
}

/**
 * Untick every box of a pending call, as a human who changes their mind.
 * @param text the note.
 * @param callId the pending call's id.
 */
export function clearBoxes(text: string, callId: string): string {
  const lines = text.split('\n');
  const [start, end] = callRange(lines, callId);
  for (let i = start; i < end; i++) lines[i] = (lines[i] ?? '').replace(/^- \[[xX]\] /, '- [ ] ');
  return lines.join('\n');
}

/**
 * SIGTERM the daemon and wait for its exit; after `ms` it is killed (the exit is then `SIGKILL`,
 * which fails the caller's exit-code assertion instead of hanging the suite).
 * @param daemon the daemon child process.
 * @param ms how long a clean stop may take; defaults to 20 s.
 */
export async function stopDaemon(daemon: DaemonProcess, ms = 20_000): Promise<number | string> {
  const timer = setTimeout(() => daemon.child.kill('SIGKILL'), ms);
  try {
    return await daemon.stop();
  } finally {
    clearTimeout(timer);
  }
}
