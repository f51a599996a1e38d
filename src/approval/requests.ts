import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { PreviewBasis } from '../protocol/types.ts';
import { readClaimedName } from '../vault/claim.ts';
import { Journal, type JournalDamage } from '../vault/journal.ts';

/** The file name of the approval requests inside the state directory. */
export const REQUESTS_FILE = 'approval-requests.jsonl';

/** Where a request is in its life: pending → approved | rejected | expired → consumed. */
export type RequestState =
  'pending' | 'approved' | 'rejected' | 'expired' | 'consumed' | 'superseded';

/**
 * Through what a human decided: a box ticked in the note (`tick`), the note moved to the approved
 * or rejected folder (`move`), `vaultd approve|reject` (`cli`), or the HTTP API (`http`).
 */
export type DecisionChannel = 'tick' | 'move' | 'cli' | 'http';

/** A human's decision on a request. */
export interface RequestDecision {
  readonly kind: 'approve' | 'reject';
  /** Approve and grant the tool (or `scope`) from now on. */
  readonly always: boolean;
  /** The grant's rule when `always` is scoped, e.g. `write_file(path:Notes/*)`. */
  readonly scope: string | null;
  readonly channel: DecisionChannel;
  /** Who: `human` in the vault, the user name for the CLI, `api` for HTTP. */
  readonly by: string;
  /** ISO time of the decision. */
  readonly at: string;
  readonly reason: string | null;
  /** Parameters the human edited, when they did. */
  readonly arguments: Record<string, unknown> | null;
}

/** One call vaultd put before a human (SPEC section 5, "A decision is bound and one-shot"). */
export interface ApprovalRequest {
  /** Random, shown in the note as the call's `nonce`; also the id of the HTTP API and the CLI. */
  readonly id: string;
  /** Vault-relative path of the note where the call waits. */
  readonly note: string;
  readonly callId: string;
  readonly tool: string;
  /** Hash of the normalised arguments vaultd asked about. */
  readonly argsHash: string;
  /** The normalised arguments vaultd asked about. */
  readonly arguments: Readonly<Record<string, unknown>>;
  /** Why the call waits. */
  readonly reason: string;
  readonly preview: string | null;
  /** `diff` when the preview is a unified diff. */
  readonly previewKind?: 'text' | 'diff';
  /** The files the preview was made from, checked again before the call runs. */
  readonly basis?: readonly PreviewBasis[];
  /** Hash of the tool's input schema when vaultd asked (absent in requests of older versions). */
  readonly schemaHash?: string;
  readonly requestedAt: string;
  readonly expiresAt: string;
  readonly state: RequestState;
  readonly decision: RequestDecision | null;
  /**
   * The folder a human moved the note to, to decide (`Approved/` or `Rejected/`), when vaultd
   * last took the note from there: recorded with the claim, before the note moves, so a note
   * resumed after a kill at the claim is still decided by the move (it was forgotten: a note
   * moved to `Approved/` was asked again, one with approve ticked then moved to `Rejected/` ran;
   * crash audit).
   */
  readonly claimedFrom?: MoveFolder;
  /**
   * Where the note was (its claim in `In_Progress/`) when the request was bound to `note`, the
   * name the note was about to get in `Pending_Approval/`: the binding is written before the note
   * moves, and a note still found there after a stop never got that name (see
   * {@link ApprovalRequests.boundAhead}).
   */
  readonly movedFrom?: string;
}

/**
 * Whether a request waits for a human: pending and not past its expiry. What `vaultd approvals`,
 * the HTTP API, the Dashboard, `vaultd status` and the pending metric list and count.
 * @param request the request.
 * @param now the time to compare its expiry with.
 */
export function isWaiting(request: ApprovalRequest, now = Date.now()): boolean {
  return request.state === 'pending' && Date.parse(request.expiresAt) > now;
}

/** A folder whose move decides: `approved` or `rejected`. */
export type MoveFolder = 'approved' | 'rejected';

/** What {@link ApprovalRequests.create} needs. */
export interface NewRequest {
  readonly note: string;
  readonly callId: string;
  readonly tool: string;
  readonly argsHash: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly reason: string;
  readonly preview: string | null;
  readonly previewKind?: 'text' | 'diff';
  readonly basis?: readonly PreviewBasis[];
  readonly schemaHash?: string;
  readonly expireAfterMs: number;
  readonly now?: Date;
}

type Line =
  | ({ t: 'request' } & Omit<ApprovalRequest, 'state' | 'decision'>)
  | { t: 'decide'; id: string; decision: RequestDecision }
  | { t: 'state'; id: string; state: RequestState; at: string }
  | { t: 'note'; id: string; note: string; from?: MoveFolder; movedFrom?: string };

/** How long requests in a final state are kept for the record. */
const KEEP_FINAL_MS = 7 * 86_400_000;

/**
 * The approval requests of a vault, in `<stateDir>/approval-requests.jsonl`: one record per call
 * vaultd asked a human about, with a random id (the nonce shown in the note), the call's note,
 * id, tool and arguments hash, its expiry and its state. A decision counts only for a request
 * that is still pending and only once: approved or rejected requests are consumed when acted on,
 * and a copied or replayed note finds none. Written through an asynchronous journal (no
 * synchronous fsync on the event loop); only the daemon writes it, other processes (the CLI) hand
 * their decisions over through `.vaultd/decisions/`.
 */
export class ApprovalRequests {
  readonly path: string;
  readonly #journal: Journal<Line>;
  readonly #byId = new Map<string, ApprovalRequest>();
  readonly #damage: JournalDamage | null;
  /** Ids of the requests in state `pending`, kept with every line applied. */
  readonly #pending = new Set<string>();
  /** Ids of the requests by call id, to find the older ones of a call asked again. */
  readonly #byCall = new Map<string, Set<string>>();
  /** The last change in flight per request id: changes of one request are made one at a time. */
  readonly #changing = new Map<string, Promise<unknown>>();
  #version = 0;
  /** {@link openFor}'s index, built at `#openByNameVersion`. */
  #openByName: Map<string, ApprovalRequest[]> | undefined;
  #openByNameVersion = -1;

  private constructor(journal: Journal<Line>, damage: JournalDamage | null) {
    this.path = journal.path;
    this.#journal = journal;
    this.#damage = damage;
  }

  /**
   * Open the requests of a state directory (created empty when missing).
   * @param stateDir the daemon's state directory, which must exist.
   */
  static async open(stateDir: string): Promise<ApprovalRequests> {
    const opened = await Journal.open(join(stateDir, REQUESTS_FILE), parseLine);
    const store = new ApprovalRequests(opened.journal, opened.damage);
    for (const line of opened.lines) applyLine(store.#byId, line);
    for (const request of store.#byId.values()) {
      if (request.state === 'pending') store.#pending.add(request.id);
      store.#indexCall(request);
    }
    if (opened.lines.length > store.#byId.size * 3 + 1000) await store.compact();
    return store;
  }

  /** What was wrong with the file at open, or null. A damaged file only makes vaultd ask again. */
  get damage(): JournalDamage | null {
    return this.#damage;
  }

  /** How many requests are pending (expired ones count until they are marked so). */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Changes with every request made, decided, moved or expired (for caches of what was seen). */
  get version(): number {
    return this.#version;
  }

  /**
   * The request with this id, or undefined.
   * @param id the request id (the nonce in the note).
   */
  get(id: string): ApprovalRequest | undefined {
    return this.#byId.get(id);
  }

  /** Every request still pending, oldest first. */
  pending(): ApprovalRequest[] {
    return [...this.#byId.values()]
      .filter((r) => r.state === 'pending')
      .sort((a, b) => a.requestedAt.localeCompare(b.requestedAt));
  }

  /**
   * How many requests are pending and not past their expiry: the calls waiting for a human as
   * vaultd recorded them (a note's text can claim any number).
   * @param now the time to compare expiries with.
   */
  waiting(now = Date.now()): number {
    let n = 0;
    for (const r of this.#byId.values()) if (isWaiting(r, now)) n++;
    return n;
  }

  /**
   * The requests still to be decided or run (pending or approved) recorded for a note of this
   * file name, in any folder (the caller checks the folder): found without reading the note.
   * @param name the note's file name, without a claim tag.
   */
  openFor(name: string): readonly ApprovalRequest[] {
    if (this.#openByName === undefined || this.#openByNameVersion !== this.#version) {
      const index = new Map<string, ApprovalRequest[]>();
      for (const request of this.#byId.values()) {
        if (request.state !== 'pending' && request.state !== 'approved') continue;
        const key = noteName(request.note);
        const list = index.get(key);
        if (list === undefined) index.set(key, [request]);
        else list.push(request);
      }
      this.#openByName = index;
      this.#openByNameVersion = this.#version;
    }
    return this.#openByName.get(name) ?? [];
  }

  /**
   * The requests asked about a call id (in any note), oldest first.
   * @param callId the call's id.
   */
  forCall(callId: string): ApprovalRequest[] {
    const out: ApprovalRequest[] = [];
    for (const id of this.#byCall.get(callId) ?? []) {
      const request = this.#byId.get(id);
      if (request !== undefined) out.push(request);
    }
    return out.sort((a, b) => a.requestedAt.localeCompare(b.requestedAt));
  }

  /** Every request, oldest first. */
  all(): ApprovalRequest[] {
    return [...this.#byId.values()].sort((a, b) => a.requestedAt.localeCompare(b.requestedAt));
  }

  /**
   * Record a new pending request with a fresh random id.
   * @param input the call, its note, why it waits, its preview and how long it may wait.
   */
  async create(input: NewRequest): Promise<ApprovalRequest> {
    const now = input.now ?? new Date();
    const line: Line = {
      t: 'request',
      id: newRequestId(),
      note: input.note,
      callId: input.callId,
      tool: input.tool,
      argsHash: input.argsHash,
      arguments: input.arguments,
      reason: input.reason,
      preview: input.preview,
      ...(input.previewKind === undefined ? {} : { previewKind: input.previewKind }),
      ...(input.basis === undefined ? {} : { basis: input.basis }),
      ...(input.schemaHash === undefined ? {} : { schemaHash: input.schemaHash }),
      requestedAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + input.expireAfterMs).toISOString(),
    };
    await this.#append(line);
    return this.#byId.get(line.id) as ApprovalRequest;
  }

  /**
   * Record a human's decision on a pending request.
   * @param id the request id.
   * @param decision what was decided, by whom and through which channel.
   * @param now the time to check expiry against; defaults to now.
   * @returns the decided request, or why the decision does not count.
   */
  async decide(
    id: string,
    decision: RequestDecision,
    now: Date = new Date(),
  ): Promise<{ ok: true; request: ApprovalRequest } | { ok: false; problem: string }> {
    // One change of a request at a time, its state looked at when its turn comes: two decisions
    // at once (a reject through the CLI, an approve through the HTTP API) both found it pending
    // while the first was being written, both were told yes, and the later line won, so a call
    // ran after its rejection was confirmed.
    return this.#oneAtATime(id, async () => {
      const request = this.#byId.get(id);
      if (request === undefined) return { ok: false, problem: 'no pending approval for this call' };
      if (request.state === 'pending' && Date.parse(request.expiresAt) <= now.getTime()) {
        await this.#append({ t: 'state', id, state: 'expired', at: now.toISOString() });
        return { ok: false, problem: 'the approval expired' };
      }
      if (request.state !== 'pending') {
        return {
          ok: false,
          problem: `no pending approval for this call (the request is ${request.state})`,
        };
      }
      await this.#append({ t: 'decide', id, decision });
      return { ok: true, request: this.#byId.get(id) as ApprovalRequest };
    });
  }

  /**
   * Move a request to another state (consumed once acted on, expired, superseded).
   * @param id the request id.
   * @param state the new state.
   * @param from the states it may be moved from (any when not given), looked at when its turn
   *   comes: an approved request is consumed once, however many claims ask at once.
   * @returns whether it was moved.
   */
  async setState(
    id: string,
    state: RequestState,
    from?: readonly RequestState[],
  ): Promise<boolean> {
    return this.#oneAtATime(id, async () => {
      const request = this.#byId.get(id);
      if (request === undefined) return false;
      if (from !== undefined && !from.includes(request.state)) return false;
      await this.#append({ t: 'state', id, state, at: new Date().toISOString() });
      return true;
    });
  }

  /**
   * Record where a request's note is now (it moved between folders), or is about to be.
   * @param id the request id.
   * @param note vault-relative path.
   * @param options `from`: for a claim, the folder whose move decides that the note was taken
   *   from; `movedFrom`: for a binding made before the note moves to `note`, where it is now.
   */
  async moved(
    id: string,
    note: string,
    options: { readonly from?: MoveFolder | undefined; readonly movedFrom?: string } = {},
  ): Promise<void> {
    const { from, movedFrom } = options;
    await this.#oneAtATime(id, async () => {
      const request = this.#byId.get(id);
      if (
        request?.note === note &&
        request.claimedFrom === from &&
        (movedFrom === undefined || request.movedFrom === movedFrom)
      ) {
        return;
      }
      await this.#append({
        t: 'note',
        id,
        note,
        ...(from === undefined ? {} : { from }),
        ...(movedFrom === undefined ? {} : { movedFrom }),
      });
    });
  }

  /**
   * The requests still open (pending or approved) that were bound, before a move, to the name a
   * note at `key` was about to get: when the note is still at `key` (a stop came between the
   * binding and the move), they are its own, and the note never got the name they give.
   * @param key the vault-relative path the note was moved from (its claim).
   */
  boundAhead(key: string): ApprovalRequest[] {
    return [...this.#byId.values()].filter(
      (r) =>
        r.movedFrom === key && r.note !== key && (r.state === 'pending' || r.state === 'approved'),
    );
  }

  /**
   * Supersede the approved requests not acted on for the call a new request asks about again: the
   * same call id and tool, in a note of the same name. A request approved before a crash and left
   * behind (vaultd asked again, the human rejected that) was taken by a note the agent wrote with
   * the old request's nonce, and the call ran. (Pending ones stay: a copy of a waiting note, asked
   * about on its own, must not void the human's decision on the original.)
   * @param request the new request.
   * @returns the requests superseded.
   */
  async supersedeOlder(request: ApprovalRequest): Promise<ApprovalRequest[]> {
    const out: ApprovalRequest[] = [];
    for (const id of this.#byCall.get(request.callId) ?? []) {
      const other = this.#byId.get(id);
      if (other === undefined || other.id === request.id || other.tool !== request.tool) continue;
      if (noteName(other.note) !== noteName(request.note)) continue;
      if (await this.setState(id, 'superseded', ['approved'])) out.push(other);
    }
    return out;
  }

  /**
   * Mark every pending request past its expiry as expired, and every approved one not acted on
   * within its time to wait after it.
   * @param now the current time; defaults to now.
   * @returns the requests that expired now.
   */
  async expireDue(now: Date = new Date()): Promise<ApprovalRequest[]> {
    const due = this.pending().filter((r) => Date.parse(r.expiresAt) <= now.getTime());
    // An approval is acted on when its note is next looked at; one left over (a crash between
    // the decision and the claim, then the call asked again) must not wait for good.
    for (const request of this.#byId.values()) {
      if (request.state !== 'approved') continue;
      const waited = Date.parse(request.expiresAt) - Date.parse(request.requestedAt);
      if (Date.parse(request.expiresAt) + waited <= now.getTime()) due.push(request);
    }
    const expired: ApprovalRequest[] = [];
    for (const request of due) {
      if (await this.setState(request.id, 'expired', ['pending', 'approved']))
        expired.push(request);
    }
    return expired;
  }

  /** Rewrite the file without requests that reached a final state more than 7 days ago. */
  async compact(): Promise<void> {
    // Read from memory inside the journal's queue, after the writes before it (Journal.rewrite).
    await this.#journal.rewrite(() => {
      const now = Date.now();
      const lines: Line[] = [];
      for (const request of this.#byId.values()) {
        const final =
          request.state !== 'pending' &&
          request.state !== 'approved' &&
          request.state !== 'rejected';
        if (final && now - Date.parse(request.expiresAt) > KEEP_FINAL_MS) {
          this.#byId.delete(request.id);
          const ids = this.#byCall.get(request.callId);
          ids?.delete(request.id);
          if (ids?.size === 0) this.#byCall.delete(request.callId);
          continue;
        }
        const { state, decision, ...rest } = request;
        lines.push({ t: 'request', ...rest });
        if (decision !== null) lines.push({ t: 'decide', id: request.id, decision });
        if (state !== 'pending' && !(decision !== null && state === stateAfter(decision))) {
          lines.push({ t: 'state', id: request.id, state, at: new Date(now).toISOString() });
        }
      }
      return lines;
    });
  }

  /** Wait for the writes queued so far. */
  drain(): Promise<void> {
    return this.#journal.drain();
  }

  /** Close the file. */
  close(): Promise<void> {
    return this.#journal.close();
  }

  async #append(line: Line): Promise<void> {
    // fsynced: a decision or a consumption lost in a power cut could let one decision act twice.
    await this.#journal.append(line, true);
    applyLine(this.#byId, line);
    const request = this.#byId.get(line.id);
    if (request?.state === 'pending') this.#pending.add(line.id);
    else this.#pending.delete(line.id);
    if (line.t === 'request' && request !== undefined) this.#indexCall(request);
    this.#version++;
  }

  #indexCall(request: ApprovalRequest): void {
    let ids = this.#byCall.get(request.callId);
    if (ids === undefined) this.#byCall.set(request.callId, (ids = new Set()));
    ids.add(request.id);
  }

  /** Run `change` after the changes of request `id` already under way. */
  #oneAtATime<T>(id: string, change: () => Promise<T>): Promise<T> {
    const before = this.#changing.get(id) ?? Promise.resolve();
    const mine = before.then(change, change);
    const settled = mine.catch(() => undefined);
    this.#changing.set(id, settled);
    void settled.then(() => {
      if (this.#changing.get(id) === settled) this.#changing.delete(id);
    });
    return mine;
  }
}

/**
 * A note's file name without the claim tag it may carry in `In_Progress/`.
 * @param note the note's path (vault-relative or absolute) or file name.
 */
export function noteName(note: string): string {
  return readClaimedName(basename(note)).original;
}

/**
 * Read the requests of a vault without writing anything (for the CLI while a daemon may run).
 * @param stateDir the vault's state directory.
 */
export async function readRequests(stateDir: string): Promise<ApprovalRequest[]> {
  let text: string;
  try {
    text = await readFile(join(stateDir, REQUESTS_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const byId = new Map<string, ApprovalRequest>();
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    try {
      const line = parseLine(JSON.parse(raw));
      if (line !== null) applyLine(byId, line);
    } catch {
      // A torn or damaged line: the daemon keeps the evidence; the CLI skips it.
    }
  }
  return [...byId.values()];
}

/** A fresh random request id: `apr_` and 26 base-32 characters (130 bits). */
export function newRequestId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = randomBytes(26);
  let out = 'apr_';
  for (const byte of bytes) out += alphabet[byte & 31];
  return out;
}

/** What a request id looks like. */
export const REQUEST_ID_PATTERN = /^apr_[a-z2-7]{26}$/;

function stateAfter(decision: RequestDecision): RequestState {
  return decision.kind === 'approve' ? 'approved' : 'rejected';
}

function applyLine(byId: Map<string, ApprovalRequest>, line: Line): void {
  if (line.t === 'request') {
    const { t: _t, ...rest } = line;
    byId.set(line.id, Object.freeze({ ...rest, state: 'pending', decision: null }));
    return;
  }
  const request = byId.get(line.id);
  if (request === undefined) return;
  if (line.t === 'decide') {
    byId.set(
      line.id,
      Object.freeze({ ...request, decision: line.decision, state: stateAfter(line.decision) }),
    );
  } else if (line.t === 'state') {
    byId.set(line.id, Object.freeze({ ...request, state: line.state }));
  } else {
    const { claimedFrom: _from, movedFrom: _movedFrom, ...rest } = request;
    byId.set(
      line.id,
      Object.freeze({
        ...rest,
        note: line.note,
        ...(line.from === undefined ? {} : { claimedFrom: line.from }),
        ...(line.movedFrom === undefined ? {} : { movedFrom: line.movedFrom }),
      }),
    );
  }
}

const STATES = new Set(['pending', 'approved', 'rejected', 'expired', 'consumed', 'superseded']);

function parseLine(value: unknown): Line | null {
  if (value === null || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  if (typeof v['id'] !== 'string') return null;
  switch (v['t']) {
    case 'request':
      return typeof v['note'] === 'string' &&
        typeof v['callId'] === 'string' &&
        typeof v['tool'] === 'string' &&
        typeof v['argsHash'] === 'string' &&
        typeof v['arguments'] === 'object' &&
        v['arguments'] !== null &&
        typeof v['requestedAt'] === 'string' &&
        typeof v['expiresAt'] === 'string'
        ? ({ reason: '', preview: null, ...v } as Line)
        : null;
    case 'decide': {
      const d = v['decision'] as Record<string, unknown> | null;
      return d !== null &&
        typeof d === 'object' &&
        (d['kind'] === 'approve' || d['kind'] === 'reject') &&
        typeof d['channel'] === 'string' &&
        typeof d['by'] === 'string'
        ? (v as Line)
        : null;
    }
    case 'state':
      return STATES.has(String(v['state'])) ? (v as Line) : null;
    case 'note':
      return typeof v['note'] === 'string' &&
        (v['from'] === undefined || v['from'] === 'approved' || v['from'] === 'rejected') &&
        (v['movedFrom'] === undefined || typeof v['movedFrom'] === 'string')
        ? (v as Line)
        : null;
    default:
      return null;
  }
}
