import type { FileHandle } from 'node:fs/promises';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.ts';
import { fsyncDirectory } from './fsync-dir.ts';
import { isVanished, toVaultIoError } from './fs-errors.ts';

/** Name of the ledger file inside the state folder. */
export const LEDGER_FILE_NAME = 'ledger.jsonl';

/** A call that is about to run with side effects. */
export interface LedgerIntent {
  /** Vault-relative path of the note, e.g. `In_Progress/task.md`. */
  readonly note: string;
  readonly callId: string;
  readonly tool: string;
  /** Hash of the canonical arguments, to tell an edited call from the recorded one. */
  readonly argsHash: string;
}

/** What the ledger knows about one call of a note. */
export interface LedgerCall {
  readonly note: string;
  readonly callId: string;
  /** From the intent; null when only completion was recorded. */
  readonly tool: string | null;
  readonly argsHash: string | null;
  /** The result's status once done; null while the intent is open. */
  readonly status: string | null;
  /** The result itself, when it was recorded with the completion (to write back after a crash). */
  readonly result?: unknown;
}

/** Options of {@link Ledger.open}. */
export interface LedgerOptions {
  /** Compact at open, and after a release, once the file is larger than this; default 1 MiB. */
  compactAboveBytes?: number;
}

type Line =
  | { type: 'intent'; note: string; callId: string; tool: string; argsHash: string; at: string }
  | { type: 'done'; note: string; callId: string; status: string; at: string; result?: unknown }
  | { type: 'release'; note: string; at: string };

interface Pending {
  readonly text: string;
  readonly sync: boolean;
  readonly apply: () => void;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The crash-safety ledger (SPEC section 6): append-only JSON lines in `.vaultd/ledger.jsonl`
 * recording each side-effecting call's intent before it runs and its completion after. After a
 * crash, an intent without completion is a call that may have acted: it is reported as
 * interrupted, never re-run. Appends go through one kept-open handle; concurrent appends that
 * arrive while a write is in flight are grouped into the next single write (and one fsync).
 */
export class Ledger {
  readonly path: string;
  private readonly notes = new Map<string, Map<string, LedgerCall>>();
  private readonly compactAboveBytes: number;
  private handle: FileHandle;
  private size: number;
  private lines: number;
  private queue: Pending[] = [];
  private scheduled = false;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(path: string, handle: FileHandle, size: number, compactAboveBytes: number) {
    this.path = path;
    this.handle = handle;
    this.size = size;
    this.lines = 0;
    this.compactAboveBytes = compactAboveBytes;
  }

  /**
   * Open (or create) the ledger in `stateDir` and read its entries. A torn last line, left by a
   * crash in the middle of an append, is ignored and cut off; a large file is compacted.
   * @param stateDir the vault's `.vaultd` folder, which must exist.
   * @param options `compactAboveBytes` (default 1 MiB).
   * @throws VaultIoError when the file cannot be read or opened for appending.
   */
  static async open(stateDir: string, options: LedgerOptions = {}): Promise<Ledger> {
    const path = join(stateDir, LEDGER_FILE_NAME);
    let content: Buffer | null = null;
    try {
      content = await readFile(path);
    } catch (error) {
      if (!isVanished(error)) throw toVaultIoError('read', path, error);
    }
    let handle: FileHandle;
    try {
      handle = await open(path, 'a', 0o644);
      // A new file's name must be durable before any fsynced intent in it can be.
      if (content === null) await fsyncDirectory(stateDir);
    } catch (error) {
      throw toVaultIoError('open', path, error);
    }
    const end = content === null ? 0 : content.lastIndexOf(0x0a) + 1;
    const ledger = new Ledger(path, handle, end, options.compactAboveBytes ?? 1024 * 1024);
    if (content !== null) {
      for (const text of content.subarray(0, end).toString('utf8').split('\n')) {
        const line = parseLine(text);
        if (line !== null) {
          ledger.apply(line);
          ledger.lines += 1;
        }
      }
      if (end < content.length) {
        try {
          await handle.truncate(end);
        } catch (error) {
          await handle.close();
          throw toVaultIoError('truncate', path, error);
        }
      }
    }
    if (ledger.size > ledger.compactAboveBytes && ledger.countLiveLines() < ledger.lines)
      await ledger.compact();
    return ledger;
  }

  /**
   * Record that a call with side effects is about to run; resolves once the line is on disk
   * (written and fsynced). Run the call only after this resolves.
   * @param entry the note, call id, tool and arguments hash.
   * @throws VaultIoError when the line could not be made durable: then do not run the call.
   */
  recordIntent(entry: LedgerIntent): Promise<void> {
    const line: Line = { type: 'intent', ...pickIntent(entry), at: new Date().toISOString() };
    return this.append(line, true);
  }

  /**
   * Record that a call finished. Not fsynced: losing this line in a power cut only makes the call
   * look interrupted (never re-run), and the result written into the note, which is fsynced, is
   * what resumption trusts first. The next fsynced intent makes it durable anyway.
   * @param note vault-relative path of the note.
   * @param callId the call.
   * @param status the result's status (`success`, `error`, `rejected`, `interrupted`).
   * @param result the result, kept so that a crash before it reaches the note does not turn a
   *   finished call into an interrupted one.
   */
  recordDone(note: string, callId: string, status: string, result?: unknown): Promise<void> {
    const at = new Date().toISOString();
    const line: Line = { type: 'done', note, callId, status, at };
    if (result !== undefined) line.result = result;
    return this.append(line, false);
  }

  /**
   * Forget a note that left `In_Progress/` with its results written: its entries are dropped (at
   * the next compaction on disk). Not fsynced, like {@link recordDone}.
   * @param note vault-relative path the note had while its calls ran.
   */
  async release(note: string): Promise<void> {
    await this.append({ type: 'release', note, at: new Date().toISOString() }, false);
    if (this.size > this.compactAboveBytes && this.countLiveLines() * 3 < this.lines)
      await this.compact();
  }

  /**
   * Calls of `note` with an intent but no completion: they may have acted before a crash.
   * @param note vault-relative path of the note.
   */
  openIntents(note: string): Map<string, LedgerIntent> {
    const open = new Map<string, LedgerIntent>();
    for (const call of this.notes.get(note)?.values() ?? []) {
      if (call.status === null && call.tool !== null) {
        open.set(call.callId, {
          note,
          callId: call.callId,
          tool: call.tool,
          argsHash: call.argsHash ?? '',
        });
      }
    }
    return open;
  }

  /**
   * Every call the ledger holds for `note`, open or done.
   * @param note vault-relative path of the note.
   */
  calls(note: string): Map<string, LedgerCall> {
    return new Map(this.notes.get(note) ?? []);
  }

  /** Notes that have at least one open intent, in the order first recorded. */
  notesWithOpenIntents(): string[] {
    return [...this.notes.keys()].filter((note) => this.openIntents(note).size > 0);
  }

  /**
   * Rewrite the file with only the entries of notes not released, atomically (temp file, fsync,
   * rename), waiting for appends in flight.
   * @throws VaultIoError when the new file cannot be written; the old one is then kept.
   */
  compact(): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`ledger ${this.path} is closed`));
    return this.enqueue(async () => {
      await this.flushQueue();
      const lines: Line[] = [];
      for (const calls of this.notes.values()) {
        for (const call of calls.values()) lines.push(...callLines(call));
      }
      const text = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
      await writeFileAtomic(this.path, text);
      const old = this.handle;
      try {
        this.handle = await open(this.path, 'a', 0o644);
      } catch (error) {
        throw toVaultIoError('open', this.path, error);
      }
      await old.close().catch(() => undefined);
      this.size = Buffer.byteLength(text);
      this.lines = lines.length;
    });
  }

  /** Write what is queued and close the file; later calls reject. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.enqueue(() => this.flushQueue());
    await this.handle.close();
  }

  private append(line: Line, sync: boolean): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`ledger ${this.path} is closed`));
    return new Promise((resolve, reject) => {
      this.queue.push({
        text: `${JSON.stringify(line)}\n`,
        sync,
        apply: () => this.apply(line),
        resolve,
        reject,
      });
      if (!this.scheduled) {
        this.scheduled = true;
        void this.enqueue(() => this.flushQueue());
      }
    });
  }

  private enqueue(operation: () => Promise<void>): Promise<void> {
    const result = this.chain.then(operation);
    this.chain = result.catch(() => undefined);
    return result;
  }

  private async flushQueue(): Promise<void> {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    const data = Buffer.from(batch.map((p) => p.text).join(''), 'utf8');
    try {
      await this.handle.writeFile(data);
      if (batch.some((p) => p.sync)) await this.handle.datasync();
    } catch (error) {
      // Cut off whatever part of the batch reached the file, so the next append starts a clean line.
      await this.handle.truncate(this.size).catch(() => undefined);
      const failure = toVaultIoError('append', this.path, error);
      for (const pending of batch) pending.reject(failure);
      return;
    }
    this.size += data.length;
    this.lines += batch.length;
    for (const pending of batch) {
      pending.apply();
      pending.resolve();
    }
  }

  private apply(line: Line): void {
    if (line.type === 'release') {
      this.notes.delete(line.note);
      return;
    }
    let calls = this.notes.get(line.note);
    if (calls === undefined) {
      calls = new Map();
      this.notes.set(line.note, calls);
    }
    const previous = calls.get(line.callId);
    if (line.type === 'intent') {
      calls.set(line.callId, {
        note: line.note,
        callId: line.callId,
        tool: line.tool,
        argsHash: line.argsHash,
        status: null,
      });
    } else {
      calls.set(line.callId, {
        note: line.note,
        callId: line.callId,
        tool: previous?.tool ?? null,
        argsHash: previous?.argsHash ?? null,
        status: line.status,
        ...(line.result === undefined ? {} : { result: line.result }),
      });
    }
  }

  private countLiveLines(): number {
    let count = 0;
    for (const calls of this.notes.values()) {
      for (const call of calls.values()) count += callLines(call).length;
    }
    return count;
  }
}

function pickIntent(entry: LedgerIntent): LedgerIntent {
  return { note: entry.note, callId: entry.callId, tool: entry.tool, argsHash: entry.argsHash };
}

function callLines(call: LedgerCall): Line[] {
  const lines: Line[] = [];
  const at = new Date().toISOString();
  if (call.tool !== null) {
    lines.push({
      type: 'intent',
      note: call.note,
      callId: call.callId,
      tool: call.tool,
      argsHash: call.argsHash ?? '',
      at,
    });
  }
  if (call.status !== null) {
    const done: Line = {
      type: 'done',
      note: call.note,
      callId: call.callId,
      status: call.status,
      at,
    };
    if (call.result !== undefined) done.result = call.result;
    lines.push(done);
  }
  return lines;
}

function parseLine(text: string): Line | null {
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object') return null;
  const line = value as Record<string, unknown>;
  if (typeof line['note'] !== 'string') return null;
  if (line['type'] === 'release') return line as Line;
  if (typeof line['callId'] !== 'string') return null;
  if (
    line['type'] === 'intent' &&
    typeof line['tool'] === 'string' &&
    typeof line['argsHash'] === 'string'
  ) {
    return line as Line;
  }
  if (line['type'] === 'done' && typeof line['status'] === 'string') return line as Line;
  return null;
}
