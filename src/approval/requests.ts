import {
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { canonicalJson } from './canonical-json.ts';

/** The file name of the approval requests inside the state directory. */
export const REQUESTS_FILE = 'approval-requests.jsonl';

/** One call vaultd put before a human, as a line of `approval-requests.jsonl`. */
export interface ApprovalRequest {
  readonly id: string;
  readonly name: string;
  /** Hash of the call's canonical arguments as the agent wrote them. */
  readonly args: string;
  /** ISO time the call started waiting; expiry counts from here, never from the note's text. */
  readonly requested_at: string;
}

/** What a call is identified by in {@link ApprovalRequests}. */
export interface RequestedCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

/**
 * The calls vaultd itself asked a human about, kept in `<stateDir>/approval-requests.jsonl`
 * (append-only, fsynced). A decision in a note's Approval section counts only for a call recorded
 * here with the same id, tool and arguments: an Approval section that an agent wrote into its own
 * note is never taken for a human's decision, and the time a call started waiting cannot be
 * moved by editing the note. Losing the file only makes vaultd ask again.
 */
export class ApprovalRequests {
  /** Absolute path of the requests file. */
  readonly path: string;
  readonly #stateDir: string;
  #byKey = new Map<string, ApprovalRequest>();
  #oldestById = new Map<string, string>();
  #stamp = '';

  private constructor(stateDir: string) {
    this.#stateDir = stateDir;
    this.path = join(stateDir, REQUESTS_FILE);
  }

  /**
   * Open the requests of a state directory; a missing file means none, and an unreadable line
   * (a torn write) is skipped, which at worst makes vaultd ask about that call again.
   * @param stateDir the daemon's state directory (`<vault>/.vaultd`); created on the first write.
   */
  static open(stateDir: string): ApprovalRequests {
    const store = new ApprovalRequests(stateDir);
    store.#reload();
    return store;
  }

  /**
   * The recorded request for exactly this call (id, tool and arguments), or undefined when
   * vaultd never asked a human about it.
   * @param call the call as the agent wrote it in the note.
   */
  find(call: RequestedCall): ApprovalRequest | undefined {
    this.#refresh();
    return this.#byKey.get(keyOf(call.id, call.name, hashArgs(call.arguments)));
  }

  /**
   * The earliest time any call with this id started waiting, or undefined.
   * @param id the call id.
   */
  requestedAt(id: string): string | undefined {
    this.#refresh();
    return this.#oldestById.get(id);
  }

  /**
   * Record that vaultd asks a human about this call, unless it already did; returns the request.
   * @param call the call as the agent wrote it in the note.
   * @param now the time to record; defaults to now.
   */
  record(call: RequestedCall, now: Date = new Date()): ApprovalRequest {
    const found = this.find(call);
    if (found !== undefined) return found;
    const request: ApprovalRequest = {
      id: call.id,
      name: call.name,
      args: hashArgs(call.arguments),
      requested_at: now.toISOString(),
    };
    mkdirSync(this.#stateDir, { recursive: true });
    const fd = openSync(this.path, 'a+', 0o600);
    try {
      // A crash may have left a torn last line: start ours on a fresh one.
      const size = fstatSync(fd).size;
      const last = Buffer.alloc(1);
      const torn = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a;
      writeSync(fd, `${torn ? '\n' : ''}${JSON.stringify(request)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.#add(request);
    this.#stamp = stampOf(this.path);
    return request;
  }

  #refresh(): void {
    if (stampOf(this.path) !== this.#stamp) this.#reload();
  }

  #reload(): void {
    this.#stamp = stampOf(this.path);
    this.#byKey = new Map();
    this.#oldestById = new Map();
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const line of text.split('\n')) {
      const request = parseLine(line);
      if (request !== null) this.#add(request);
    }
  }

  #add(request: ApprovalRequest): void {
    const key = keyOf(request.id, request.name, request.args);
    if (!this.#byKey.has(key)) this.#byKey.set(key, request);
    const oldest = this.#oldestById.get(request.id);
    if (oldest === undefined || Date.parse(request.requested_at) < Date.parse(oldest)) {
      this.#oldestById.set(request.id, request.requested_at);
    }
  }
}

function parseLine(line: string): ApprovalRequest | null {
  if (line.trim() === '') return null;
  try {
    const value = JSON.parse(line) as Partial<ApprovalRequest>;
    const { id, name, args, requested_at: at } = value;
    if (typeof id !== 'string' || typeof name !== 'string' || typeof args !== 'string') return null;
    if (typeof at !== 'string' || !Number.isFinite(Date.parse(at))) return null;
    return { id, name, args, requested_at: at };
  } catch {
    return null;
  }
}

function keyOf(id: string, name: string, args: string): string {
  return JSON.stringify([id, name, args]);
}

function hashArgs(args: Readonly<Record<string, unknown>>): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}

function stampOf(path: string): string {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.ino}:${stat.size}:${stat.mtimeNs}`;
  } catch {
    return 'absent';
  }
}
