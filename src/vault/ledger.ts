import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.ts';
import { isVanished, toVaultIoError } from './fs-errors.ts';
import { Journal, type JournalDamage } from './journal.ts';

/** Name of the ledger file inside the state folder. */
export const LEDGER_FILE_NAME = 'ledger.jsonl';
/** Folder (inside the state folder) of results too large to keep on a ledger line. */
export const RESULTS_DIR_NAME = 'results';

/** A call with side effects about to run. */
export interface LedgerIntent {
  /** The call's identity across notes and folders: see {@link callKey}. */
  readonly key: string;
  /** Vault-relative path of the claimed note, e.g. `In_Progress/task.vaultd-….md`. */
  readonly note: string;
  readonly callId: string;
  readonly tool: string;
  /** Hash of the canonical normalised arguments. */
  readonly argsHash: string;
}

/** What the ledger knows about one call. */
export interface LedgerEntry extends LedgerIntent {
  /** Wall-clock time of the intent, in ms. */
  readonly intentAt: number;
  /** The result's status once the call finished; null while the intent is open. */
  readonly status: string | null;
  /** Whether the outcome may have taken effect (success, or a failure after the effect began). */
  readonly effect: boolean;
  /** True once the result is in a note (the note was written back and moved on). */
  readonly written: boolean;
  /** Vault-relative path of the note the result went to, once written. */
  readonly writtenTo: string | null;
}

/** Options of {@link Ledger.open}. */
export interface LedgerOptions {
  /** Compact once the file is larger than this and mostly dead lines; default 1 MiB. */
  readonly compactAboveBytes?: number;
  /** Results whose JSON is larger than this go to a file of their own; default 4 KiB. */
  readonly inlineResultBytes?: number;
  /** How long an entry of a call without an explicit id counts for replays; default 10 min. */
  readonly replayWindowMs?: number;
  /** How long an entry of a call with an explicit id is kept; default 30 days. */
  readonly retentionMs?: number;
}

type Line =
  | {
      t: 'intent';
      k: string;
      note: string;
      call: string;
      tool: string;
      args: string;
      at: number;
    }
  | {
      t: 'done';
      k: string;
      status: string;
      effect: boolean;
      at: number;
      result?: unknown;
      spill?: string;
    }
  | { t: 'written'; k: string; to: string; at: number }
  | { t: 'forget'; k: string; at: number };

interface Entry {
  key: string;
  note: string;
  callId: string;
  tool: string;
  argsHash: string;
  intentAt: number;
  status: string | null;
  effect: boolean;
  result: unknown;
  spill: string | null;
  written: boolean;
  writtenTo: string | null;
  lastAt: number;
}

/**
 * The identity of a call for exactly-once execution. A call with an explicit `tool_call.id` is
 * the agent's own claim of identity: `id:<id>:<argsHash>` holds in every note and folder. A call
 * whose id vaultd derived is identified by the note's original name as well (`note:<name>:<id>`):
 * two notes with the same call are different calls, but a re-save of a note is the same note.
 * @param call the call id, whether it was explicit, and the hash of its normalised arguments.
 * @param noteName the note's original file name (before the claim).
 */
export function callKey(
  call: { readonly id: string; readonly explicitId: boolean; readonly argsHash: string },
  noteName: string,
): string {
  return call.explicitId ? `id:${call.id}:${call.argsHash}` : `note:${noteName}:${call.id}`;
}

/**
 * The crash-safety ledger (SPEC section 6), keyed by call, not by path: append-only JSON lines in
 * `.vaultd/ledger.jsonl` recording each side-effecting call's intent before it runs (fsynced), its
 * outcome after (with the result, so a crash before the write-back loses nothing), and when the
 * result reached a note. Whatever file or folder a call arrives in later, its history is found:
 * a finished call is replayed, an intent without an outcome is reported as interrupted, never run
 * again. A damaged file is kept aside and its unreadable lines are remembered, so calls whose
 * history was lost can be told apart.
 */
export class Ledger {
  readonly path: string;
  readonly #stateDir: string;
  readonly #journal: Journal<Line>;
  readonly #entries = new Map<string, Entry>();
  readonly #options: Required<LedgerOptions>;
  readonly #damage: JournalDamage | null;
  readonly #existed: boolean;
  readonly #inFlight = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  #compactedAt = -Infinity;
  #dirty = false;
  #compacting: Promise<void> | undefined;

  private constructor(
    stateDir: string,
    journal: Journal<Line>,
    options: Required<LedgerOptions>,
    damage: JournalDamage | null,
    existed: boolean,
  ) {
    this.#stateDir = stateDir;
    this.path = journal.path;
    this.#journal = journal;
    this.#options = options;
    this.#damage = damage;
    this.#existed = existed;
  }

  /**
   * Open (or create) the ledger in `stateDir`. A torn last line is cut off; a file with other
   * unreadable lines is kept aside as evidence (see {@link Ledger.damage}).
   * @param stateDir the vault's `.vaultd` folder, which must exist.
   * @param options compaction, result spill size, replay window and retention.
   * @throws VaultIoError when the file cannot be read or opened for appending.
   */
  static async open(stateDir: string, options: LedgerOptions = {}): Promise<Ledger> {
    const opened = await Journal.open(join(stateDir, LEDGER_FILE_NAME), parseLine);
    const ledger = new Ledger(
      stateDir,
      opened.journal,
      {
        compactAboveBytes: options.compactAboveBytes ?? 1024 * 1024,
        inlineResultBytes: options.inlineResultBytes ?? 4 * 1024,
        replayWindowMs: options.replayWindowMs ?? 10 * 60_000,
        retentionMs: options.retentionMs ?? 30 * 86_400_000,
      },
      opened.damage,
      opened.existed,
    );
    for (const line of opened.lines) {
      ledger.#apply(line);
    }
    if (opened.journal.size > ledger.#options.compactAboveBytes) await ledger.compact();
    return ledger;
  }

  /** What was wrong with the file at open, or null when it read cleanly. */
  get damage(): JournalDamage | null {
    return this.#damage;
  }

  /** Whether the file existed when the ledger was opened (false: a first start, or it was lost). */
  get existed(): boolean {
    return this.#existed;
  }

  /**
   * Whether the unreadable part of a damaged ledger may have held this call: its id appears in
   * the damaged lines. Such a call's history cannot be read, so it must not run without a human.
   * @param callId the call id.
   */
  mayHaveLost(callId: string): boolean {
    return this.#damage !== null && this.#damage.badText.includes(callId);
  }

  /**
   * The live entry of a call (expired ones are gone), or undefined when the ledger has none.
   * @param key from {@link callKey}.
   */
  lookup(key: string): LedgerEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || this.#expired(entry, Date.now())) return undefined;
    return view(entry);
  }

  /**
   * Whether this process is running the call now (its intent recorded, no outcome yet).
   * @param key from {@link callKey}.
   */
  isInFlight(key: string): boolean {
    return this.#inFlight.has(key);
  }

  /**
   * Resolve once the call this process is running has an outcome (at once when none runs).
   * @param key from {@link callKey}.
   */
  async settled(key: string): Promise<void> {
    await this.#inFlight.get(key)?.promise;
  }

  /**
   * The recorded result of a finished call, reading it from its own file when it was large.
   * @param key from {@link callKey}.
   * @returns the result, or undefined when none was recorded or its file is gone.
   */
  async result(key: string): Promise<unknown> {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.result !== undefined) return entry.result;
    if (entry.spill === null) return undefined;
    try {
      return JSON.parse(await readFile(join(this.#resultsDir(), entry.spill), 'utf8')) as unknown;
    } catch {
      return undefined;
    }
  }

  /**
   * Record that a call with side effects is about to run; resolves once the line is written and
   * fsynced. Run the call only after this resolves.
   * @param intent the call's key, note, id, tool and arguments hash.
   * @throws VaultIoError when the line could not be made durable: then do not run the call.
   * @throws DuplicateIntentError when the call is running, or ran and may have acted.
   */
  async recordIntent(intent: LedgerIntent): Promise<void> {
    // Never a second intent for a call running, or one that may have acted: two claims of one
    // note (a copy moved in beside the claim) both passed their look at the ledger before either
    // ran. (A call that failed without acting may run again; one a human let run again after it
    // was cut off was forgotten first.)
    const entry = this.#entries.get(intent.key);
    if (
      this.#inFlight.has(intent.key) ||
      (entry !== undefined && (entry.status === null || entry.status === 'success' || entry.effect))
    ) {
      throw new DuplicateIntentError(intent.key);
    }
    const line: Line = {
      t: 'intent',
      k: intent.key,
      note: intent.note,
      call: intent.callId,
      tool: intent.tool,
      args: intent.argsHash,
      at: Date.now(),
    };
    let resolve = (): void => undefined;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#inFlight.set(intent.key, { promise, resolve });
    try {
      await this.#append(line, true);
    } catch (error) {
      this.#settle(intent.key);
      throw error;
    }
  }

  /**
   * Record a call's outcome, with its result (large ones in a file of their own), so that a crash
   * before the result reaches the note loses nothing. Group-committed, not fsynced on its own:
   * losing it in a power cut makes the call look interrupted, never run again.
   * @param key from {@link callKey}.
   * @param status the result's status.
   * @param effect whether the outcome may have taken effect.
   * @param result the result to keep.
   */
  async recordDone(key: string, status: string, effect: boolean, result: unknown): Promise<void> {
    try {
      const json = JSON.stringify(result);
      const line: Line = { t: 'done', k: key, status, effect, at: Date.now() };
      if (json !== undefined && Buffer.byteLength(json) > this.#options.inlineResultBytes) {
        const name = `${createHash('sha256').update(key).digest('hex').slice(0, 32)}.json`;
        try {
          await mkdir(this.#resultsDir(), { recursive: true });
          await writeFileAtomic(join(this.#resultsDir(), name), json, { fsyncDir: false });
          line.spill = name;
        } catch {
          // A full disk (or a results folder that is not one): the result stays in the line, in
          // memory at least, rather than the outcome going unrecorded and the call reported as
          // cut off with its result lost.
          line.result = result;
        }
      } else if (result !== undefined) {
        line.result = result;
      }
      await this.#appendKnown(line);
    } finally {
      this.#settle(key);
    }
  }

  /**
   * Record that the results of these calls are in a note now (written back and moved on).
   * @param keys the calls.
   * @param to vault-relative path of the note.
   */
  async markWritten(keys: readonly string[], to: string): Promise<void> {
    const at = Date.now();
    for (const key of keys) {
      const entry = this.#entries.get(key);
      if (entry === undefined || (entry.written && entry.writtenTo === to)) continue;
      await this.#appendKnown({ t: 'written', k: key, to, at });
    }
    await this.#maybeCompact();
  }

  /**
   * Drop a call's history: a human decided that a call whose outcome was unknown may run again.
   * @param key from {@link callKey}.
   */
  async forget(key: string): Promise<void> {
    if (!this.#entries.has(key)) return;
    // fsynced: the approval used after it must not outlive it in a power cut.
    await this.#append({ t: 'forget', k: key, at: Date.now() }, true);
  }

  /** Every live entry (for `vaultd status` and tests). */
  entries(): LedgerEntry[] {
    const now = Date.now();
    return [...this.#entries.values()].filter((e) => !this.#expired(e, now)).map(view);
  }

  /** Whether the file at the ledger's path is still the one being appended to. */
  isCurrent(): Promise<boolean> {
    return this.#journal.isCurrent();
  }

  /**
   * Rewrite the file with only the live entries (atomic: temp file, fsync, rename), and delete
   * result files no entry needs any more.
   * @throws VaultIoError when the new file cannot be written; the old one is then kept.
   */
  compact(): Promise<void> {
    this.#compacting ??= (async () => {
      try {
        // The lines are read from memory inside the journal's queue, once the appends before
        // the rewrite are written and counted (see Journal.rewrite).
        await this.#journal.rewrite(() => {
          const now = Date.now();
          const lines: Line[] = [];
          for (const entry of [...this.#entries.values()]) {
            if (this.#expired(entry, now)) {
              this.#entries.delete(entry.key);
              continue;
            }
            if (entry.written && now - entry.intentAt > this.#options.replayWindowMs) {
              // Past the replay window only the outcome is needed, not the whole result.
              entry.result = undefined;
              entry.spill = null;
            }
            lines.push(...entryLines(entry));
          }
          return lines;
        });
        await this.#removeUnusedResults();
      } finally {
        this.#compacting = undefined;
      }
    })();
    return this.#compacting;
  }

  /** Wait for the appends queued so far. */
  drain(): Promise<void> {
    return this.#journal.drain();
  }

  /** Write what is queued and close the file. */
  async close(): Promise<void> {
    await this.#compacting?.catch(() => undefined);
    await this.#journal.close();
  }

  async #append(line: Line, sync: boolean): Promise<void> {
    await this.#journal.append(line, sync);
    this.#apply(line);
  }

  /**
   * Append a line whose fact this process already knows (an outcome, a write-back): it counts in
   * memory at once, so a failed write (disk full) never turns a finished call into an unknown
   * one while the daemon runs; the next compaction writes it.
   */
  async #appendKnown(line: Line): Promise<void> {
    this.#apply(line);
    try {
      await this.#journal.append(line, false);
      if (this.#dirty) {
        this.#dirty = false;
        await this.compact().catch(() => {
          this.#dirty = true;
        });
      }
    } catch (error) {
      this.#dirty = true;
      throw error;
    }
  }

  #settle(key: string): void {
    const flight = this.#inFlight.get(key);
    if (flight === undefined) return;
    this.#inFlight.delete(key);
    flight.resolve();
  }

  #apply(line: Line): void {
    if (line.t === 'forget') {
      this.#entries.delete(line.k);
      return;
    }
    if (line.t === 'intent') {
      this.#entries.set(line.k, {
        key: line.k,
        note: line.note,
        callId: line.call,
        tool: line.tool,
        argsHash: line.args,
        intentAt: line.at,
        status: null,
        effect: true,
        result: undefined,
        spill: null,
        written: false,
        writtenTo: null,
        lastAt: line.at,
      });
      return;
    }
    const entry = this.#entries.get(line.k);
    if (entry === undefined) return;
    entry.lastAt = line.at;
    if (line.t === 'done') {
      entry.status = line.status;
      entry.effect = line.effect;
      entry.result = line.result;
      entry.spill = line.spill ?? null;
    } else {
      entry.written = true;
      entry.writtenTo = line.to;
    }
  }

  #expired(entry: Entry, now: number): boolean {
    // Never forget a call whose result has not reached a note yet, nor one still open.
    if (!entry.written || entry.status === null) return false;
    const keep = entry.key.startsWith('id:')
      ? this.#options.retentionMs
      : this.#options.replayWindowMs;
    return now - entry.intentAt > keep;
  }

  async #maybeCompact(): Promise<void> {
    if (this.#journal.size <= this.#options.compactAboveBytes) return;
    const now = performance.now();
    // Compacting walks every entry: at most once a minute, however busy the vault.
    if (now - this.#compactedAt < 60_000) return;
    this.#compactedAt = now;
    await this.compact().catch(() => undefined);
  }

  #resultsDir(): string {
    return join(this.#stateDir, RESULTS_DIR_NAME);
  }

  async #removeUnusedResults(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.#resultsDir());
    } catch (error) {
      if (isVanished(error)) return;
      throw toVaultIoError('readdir', this.#resultsDir(), error);
    }
    const used = new Set([...this.#entries.values()].map((e) => e.spill));
    for (const name of names) {
      if (!used.has(name)) await unlink(join(this.#resultsDir(), name)).catch(() => undefined);
    }
  }
}

function view(entry: Entry): LedgerEntry {
  return {
    key: entry.key,
    note: entry.note,
    callId: entry.callId,
    tool: entry.tool,
    argsHash: entry.argsHash,
    intentAt: entry.intentAt,
    status: entry.status,
    effect: entry.effect,
    written: entry.written,
    writtenTo: entry.writtenTo,
  };
}

function entryLines(entry: Entry): Line[] {
  const lines: Line[] = [
    {
      t: 'intent',
      k: entry.key,
      note: entry.note,
      call: entry.callId,
      tool: entry.tool,
      args: entry.argsHash,
      at: entry.intentAt,
    },
  ];
  if (entry.status !== null) {
    const done: Line = {
      t: 'done',
      k: entry.key,
      status: entry.status,
      effect: entry.effect,
      at: entry.lastAt,
    };
    if (entry.result !== undefined) done.result = entry.result;
    if (entry.spill !== null) done.spill = entry.spill;
    lines.push(done);
  }
  if (entry.written)
    lines.push({ t: 'written', k: entry.key, to: entry.writtenTo ?? '', at: entry.lastAt });
  return lines;
}

function parseLine(value: unknown): Line | null {
  if (value === null || typeof value !== 'object') return null;
  const line = value as Record<string, unknown>;
  if (typeof line['k'] !== 'string' || typeof line['at'] !== 'number') return null;
  switch (line['t']) {
    case 'intent':
      return typeof line['note'] === 'string' &&
        typeof line['call'] === 'string' &&
        typeof line['tool'] === 'string' &&
        typeof line['args'] === 'string'
        ? (line as Line)
        : null;
    case 'done':
      return typeof line['status'] === 'string' &&
        typeof line['effect'] === 'boolean' &&
        (line['spill'] === undefined || /^[0-9a-f]{32}\.json$/.test(String(line['spill'])))
        ? (line as Line)
        : null;
    case 'written':
      return typeof line['to'] === 'string' ? (line as Line) : null;
    case 'forget':
      return line as Line;
    default:
      return null;
  }
}

/** A call's intent recorded again while it runs or after it ran: the call must not run. */
export class DuplicateIntentError extends Error {
  readonly code = 'EDUPLICATE';
  /** @param key the call's ledger key. */
  constructor(key: string) {
    super(`the call ${key} is running or ran already, from another copy of this note`);
    this.name = 'DuplicateIntentError';
  }
}
