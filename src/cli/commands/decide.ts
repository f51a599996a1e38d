import { existsSync, lstatSync, statSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import {
  compileGrant,
  grantToolName,
  readRequests,
  REQUEST_ID_PATTERN,
  type ApprovalRequest,
  type RequestDecision,
} from '../../approval/index.ts';
import { readWaitingDecision, submitDecision } from '../../approval/decision-files.ts';
import { isWaiting } from '../../approval/requests.ts';
import { CONFIG_DEFAULTS } from '../../config/defaults.ts';
import { loadConfig } from '../../config/index.ts';
import { readLock, resolveLayout, STATE_DIR_NAME } from '../../vault/index.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { loadSetup } from '../setup.ts';
import { printable, printableJson } from '../printable.ts';

/** Options of `vaultd approve` and `vaultd reject`. */
export interface DecideOptions extends CommonOptions {
  /** Only this call of the note. */
  readonly call?: string;
  /** Told to the agent. */
  readonly reason?: string;
  /** Approve and grant the tool from now on (`approve` only). */
  readonly always?: boolean;
  /** The grant's rule when it should not cover the whole tool, e.g. `write_file(path:Notes/*)`; implies `always`. */
  readonly scope?: string;
}

/**
 * `vaultd approve ID|NOTE` / `vaultd reject ID|NOTE`: decide pending calls from the command line,
 * a channel agents cannot reach when they may only write the inbox. The decision is handed to the
 * daemon through `.vaultd/decisions/`; it counts once, for a request that is still pending. A note
 * stands for the requests recorded for its vault-relative path, never for what its text names;
 * calls already decided are skipped and named, the rest decided (exit 0 when any was).
 * @param decision approve or reject.
 * @param target a request id (`apr_…`, shown in the note and by `vaultd approvals`), or a note
 *   (a path, or a name in `Pending_Approval/`).
 * @param options common options, `--call`, `--reason`, `--always`, `--scope`.
 */
export async function runDecision(
  decision: 'approve' | 'reject',
  target: string,
  options: DecideOptions,
): Promise<number> {
  if (decision === 'reject' && (options.always === true || options.scope !== undefined)) {
    process.stderr.write('vaultd: --always and --scope go with approve, not reject\n');
    return EXIT.usage;
  }
  if (options.scope !== undefined) {
    const compiled = compileGrant(options.scope);
    if (typeof compiled === 'string') {
      process.stderr.write(`vaultd: --scope ${JSON.stringify(options.scope)}: ${compiled}\n`);
      return EXIT.usage;
    }
  }
  let stateDir: string;
  try {
    stateDir = await findStateDir(target, options);
  } catch (error) {
    if (!(error instanceof StateDirRefused)) throw error;
    process.stderr.write(`vaultd: ${printable(error.message)}\n`);
    return EXIT.failure;
  }
  const requests = await readRequests(stateDir);
  const chosen = await chooseRequests(target, requests, stateDir, options);
  if (typeof chosen === 'string') {
    process.stderr.write(`vaultd: ${chosen}\n`);
    return EXIT.failure;
  }
  // Every check before the first decision is handed over: a usage error decides nothing.
  for (const request of chosen.open) {
    if (options.scope !== undefined && grantToolName(options.scope) !== request.tool) {
      process.stderr.write(
        `vaultd: --scope ${JSON.stringify(options.scope)} does not name ${request.tool}\n`,
      );
      return EXIT.usage;
    }
  }
  const by = userName();
  const done: ApprovalRequest[] = [];
  const skipped = [...chosen.skipped];
  for (const request of chosen.open) {
    const entry: RequestDecision = {
      kind: decision,
      always: options.always === true || options.scope !== undefined,
      scope: options.scope?.trim() ?? null,
      channel: 'cli',
      by,
      at: new Date().toISOString(),
      reason: options.reason ?? null,
      arguments: null,
    };
    if (await submitDecision(stateDir, request.id, entry)) {
      done.push(request);
      continue;
    }
    const waiting = await readWaitingDecision(stateDir, request.id);
    skipped.push({
      request,
      why:
        waiting === null
          ? 'a decision for it is already waiting for the daemon'
          : `already ${waiting.kind === 'approve' ? 'approved' : 'rejected'} (waiting for the daemon)`,
    });
  }
  if (done.length === 0) {
    for (const s of skipped)
      process.stderr.write(`vaultd: ${describeRequest(s.request)}: ${s.why}\n`);
    process.stderr.write(`vaultd: nothing ${decision === 'approve' ? 'approved' : 'rejected'}\n`);
    return EXIT.failure;
  }
  const verb = decision === 'approve' ? 'approved' : 'rejected';
  for (const r of done) {
    process.stdout.write(
      `${verb}: ${describeRequest(r)}\n    ${printable(JSON.stringify(r.arguments))}\n`,
    );
  }
  for (const s of skipped)
    process.stdout.write(`skipped: ${describeRequest(s.request)}: ${s.why}\n`);
  const lock = await readLock(stateDir);
  process.stdout.write(
    lock?.alive === true
      ? 'the running daemon applies it now\n'
      : 'no daemon runs on this vault: the decision applies when it starts\n',
  );
  return EXIT.ok;
}

/**
 * `vaultd approvals`: the calls waiting for a human, with the ids `vaultd approve` takes.
 * @param options common options and `--json`.
 */
export async function runApprovals(options: CommonOptions & { json?: boolean }): Promise<number> {
  const stateDir = await findStateDir(undefined, options);
  const now = Date.now();
  const pending = (await readRequests(stateDir)).filter((r) => isWaiting(r, now));
  if (options.json === true) {
    process.stdout.write(`${printableJson(pending)}\n`);
    return EXIT.ok;
  }
  if (pending.length === 0) {
    process.stdout.write('no call waits for a decision\n');
    return EXIT.ok;
  }
  for (const r of pending) {
    process.stdout.write(
      `${r.id}  ${printable(r.tool)} · ${printable(r.callId)}  ${printable(r.note)}  expires ${r.expiresAt}\n    ${printable(JSON.stringify(r.arguments))}\n`,
    );
  }
  return EXIT.ok;
}

/** A request of the target that is not decided now, and why. */
interface Skipped {
  readonly request: ApprovalRequest;
  readonly why: string;
}

/** What `vaultd approve|reject` decides: the open requests, and those it leaves, with why. */
interface Chosen {
  readonly open: readonly ApprovalRequest[];
  readonly skipped: readonly Skipped[];
}

/**
 * The requests a target names. A note names the requests vaultd recorded for it, by its
 * vault-relative path in the request store; its text is never read: an agent that can write the
 * note could name there the request of another note (a note swap).
 */
async function chooseRequests(
  target: string,
  requests: readonly ApprovalRequest[],
  stateDir: string,
  options: DecideOptions,
): Promise<Chosen | string> {
  const pendingNow = (r: ApprovalRequest): boolean =>
    r.state === 'pending' && Date.parse(r.expiresAt) > Date.now();
  if (REQUEST_ID_PATTERN.test(target)) {
    const request = requests.find((r) => r.id === target);
    if (request === undefined) return `no approval request ${target}`;
    if (!pendingNow(request)) {
      return `no pending approval for ${target} (it is ${request.state === 'pending' ? 'expired' : request.state})`;
    }
    return { open: [request], skipped: [] };
  }
  const vault = dirname(stateDir);
  const layout = resolveLayout({
    vault,
    folders: (await loadFolders(options, vault)) ?? CONFIG_DEFAULTS.folders,
  });
  const candidates = [
    resolve(target),
    join(layout.pending, basename(target)),
    join(layout.pending, `${basename(target)}.md`),
  ];
  const path = candidates.find((p) => existsSync(p) && statSync(p).isFile());
  if (path === undefined) return `no such note or request: ${target}`;
  const key = await vaultKey(vault, path);
  if (key === undefined) return `${path} is not in the vault ${vault}`;
  const ofNote = requests.filter(
    (r) => r.note === key && (options.call === undefined || r.callId === options.call),
  );
  const open: ApprovalRequest[] = [];
  const skipped: Skipped[] = [];
  for (const r of ofNote) {
    if (r.state === 'approved' || r.state === 'rejected') {
      skipped.push({ request: r, why: `already ${r.state}` });
    } else if (pendingNow(r)) {
      open.push(r);
    }
  }
  // Two requests open for one call of one note: the note's text says which one the daemon acts
  // on, and that text is the agent's. Deciding one by id is for the human, after looking at both.
  const byCall = new Map<string, ApprovalRequest[]>();
  for (const r of open) byCall.set(r.callId, [...(byCall.get(r.callId) ?? []), r]);
  const unique: ApprovalRequest[] = [];
  for (const [callId, same] of byCall) {
    if (same.length === 1) {
      unique.push(...same);
      continue;
    }
    for (const request of same) {
      skipped.push({
        request,
        why: `${same.length} requests wait for call ${callId} of this note; check them with vaultd approvals and decide one by its request id`,
      });
    }
  }
  if (unique.length === 0 && skipped.length === 0) {
    return `${path} has no pending call${options.call === undefined ? '' : ` with id ${options.call}`}`;
  }
  return { open: unique, skipped };
}

/**
 * The vault-relative path of a note, as vaultd records it: its folder resolved, its own name
 * kept (a note replaced by a link to another note is still only itself); undefined outside.
 */
async function vaultKey(vault: string, path: string): Promise<string | undefined> {
  const rel = relative(await realpath(vault), join(await realpath(dirname(path)), basename(path)))
    .split(sep)
    .join('/');
  if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel)) return undefined;
  return rel;
}

function describeRequest(r: ApprovalRequest): string {
  return printable(`${r.id} (${r.tool} · ${r.callId} in ${r.note})`);
}

/**
 * The vault's state folder: from `--vault`/`--config` when given, else from the note's path (the
 * nearest folder above it with a `.vaultd/`), else from the current directory's config.
 */
async function findStateDir(target: string | undefined, options: CommonOptions): Promise<string> {
  if (options.vault === undefined && options.config === undefined && target !== undefined) {
    // Every `.vaultd/` above the note: an agent that writes the vault can make one in a folder
    // of it (Pending_Approval/.vaultd/, with requests of its own and `decisions/` linked to the
    // real one), and the nearest would be taken, the human's approval landing on the agent's
    // call. Found this way, the state folder must be the only one above the note and a real
    // folder of a user this one trusts, its `decisions/` too.
    const found: string[] = [];
    for (let dir = dirname(resolve(target)); ; dir = dirname(dir)) {
      if (existsSync(join(dir, STATE_DIR_NAME))) found.push(join(dir, STATE_DIR_NAME));
      if (dirname(dir) === dir) break;
    }
    if (found.length > 1)
      throw new StateDirRefused(
        `more than one vaultd state folder above ${target} (${found.join(', ')}): one of them may have been made by an agent; name the vault with --vault or --config`,
      );
    if (found.length === 1) {
      const problem = untrustedStateDir(found[0] as string);
      if (problem !== null)
        throw new StateDirRefused(`${problem}; name the vault with --vault or --config`);
      return found[0] as string;
    }
  }
  const { config } = await loadSetup(options);
  return join(config.vault, STATE_DIR_NAME);
}

/** A state folder `vaultd approve NOTE` will not take from the note's path. */
class StateDirRefused extends Error {}

/**
 * Why a `.vaultd/` found from a note's path is not to be trusted, or null: it (or its
 * `decisions/`, where the decision is written) is a link or not a folder, or belongs to another
 * user than this one, root, or the owner of the folder it is in (the vault's: vaultd's own user
 * when a person runs this as root).
 */
function untrustedStateDir(stateDir: string): string | null {
  const uid = process.getuid?.();
  let owners: number[];
  try {
    owners = uid === undefined ? [] : [uid, 0, lstatSync(dirname(stateDir)).uid];
  } catch {
    return `${dirname(stateDir)} cannot be read`;
  }
  for (const dir of [stateDir, join(stateDir, 'decisions')]) {
    let stats;
    try {
      stats = lstatSync(dir);
    } catch {
      if (dir === stateDir) return `${dir} cannot be read`;
      continue; // no decisions/ yet: the first decision makes it
    }
    if (stats.isSymbolicLink()) return `${dir} is a symbolic link`;
    if (!stats.isDirectory()) return `${dir} is not a folder`;
    if (uid !== undefined && !owners.includes(stats.uid))
      return `${dir} belongs to another user (uid ${stats.uid})`;
  }
  return null;
}

async function loadFolders(
  options: CommonOptions,
  vault: string,
): Promise<Parameters<typeof resolveLayout>[0]['folders'] | undefined> {
  if (options.vault === undefined && options.config === undefined) {
    // Found from the note's path: the vault's own vaultd.yaml may rename the folders.
    const own = join(vault, 'vaultd.yaml');
    if (!existsSync(own)) return undefined;
    try {
      return loadConfig({ file: own, vault }).folders;
    } catch {
      return undefined;
    }
  }
  try {
    return (await loadSetup(options)).config.folders;
  } catch {
    return undefined;
  }
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}
