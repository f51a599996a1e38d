import { Worker } from 'node:worker_threads';
import { readApprovalSection } from '../approval/section-parse.ts';
import type { ApprovalSectionRead } from '../approval/section-types.ts';
import { parseNote } from './find-calls.ts';
import { hasLongFrontMatter } from './front-matter.ts';
import { EditedText, ParseAssembler, type PackEdit, type ParsePart } from './transfer.ts';
import { applyWriteBack, type NoteJob, type WriteBackEdit } from './worker-ops.ts';
import { RecentTexts } from './recent-texts.ts';
import type { ToolResult } from '../protocol/types.ts';
import type { ParsedNote } from './types.ts';

/** Thrown when a note takes longer than the deadline to parse or edit. */
export class NoteTooComplexError extends Error {
  readonly code = 'NOTE_TOO_COMPLEX';
  constructor(chars: number, timeoutMs: number) {
    super(
      `the note (${chars} characters) took more than ${timeoutMs} ms to parse (the machine may be overloaded); split the note or raise parse_timeout_ms`,
    );
    this.name = 'NoteTooComplexError';
  }
}

/** Options of {@link NoteWorker}. */
export interface NoteWorkerOptions {
  /** Notes up to this many characters are handled in the calling thread; default 64 Ki. */
  readonly inlineChars?: number;
  /** Deadline of one job in the worker; default 20 s. */
  readonly timeoutMs?: number;
  /**
   * Calls read from an Approval section at most (the daemon: twice `max_calls_per_note`);
   * default no limit.
   */
  readonly maxSectionCalls?: number;
}

interface Pending {
  readonly worker: Worker;
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout | undefined;
  /** The parts of a large parse received so far. */
  assembler?: ParseAssembler;
}

// In a checkout the sources run through tsx; from the bundle, the worker is a bundle of its own.
const SOURCE_MODE = import.meta.url.endsWith('.ts');
const WORKER_URL = SOURCE_MODE
  ? new URL('./note-worker-dev.mjs', import.meta.url)
  : new URL('./note-worker.mjs', import.meta.url);

/** An edit with more results than this goes to the worker, whatever the note's size. */
const INLINE_RESULTS = 256;
/** Results per message to the worker (see {@link postInParts}). */
const RESULTS_PER_MESSAGE = 1_000;

/** Post an edit's results in parts, then the edit without them; see `NoteWorker#post`. */
async function postInParts(
  worker: Worker,
  id: number,
  job: Extract<NoteJob, { op: 'edit' }>,
  results: readonly ToolResult[],
): Promise<void> {
  for (let at = 0; at < results.length; at += RESULTS_PER_MESSAGE) {
    worker.postMessage({ id, part: results.slice(at, at + RESULTS_PER_MESSAGE) });
    await new Promise((resolve) => setImmediate(resolve));
  }
  worker.postMessage({ id, job: { ...job, edit: { ...job.edit, results: [] } }, parts: true });
}

/**
 * Parses and edits notes; large ones in a worker thread, with a deadline. The parser is linear,
 * but a note of a few megabytes still takes a few hundred milliseconds, which on the main thread
 * would stall every other note, timer and HTTP request for that long. A job past its deadline (a
 * safety net, not a limit any note under the size cap reaches) terminates the worker (a fresh one
 * starts for the next job).
 */
export class NoteWorker {
  readonly #inlineChars: number;
  readonly #maxSectionCalls: number;
  readonly #timeoutMs: number;
  #worker: { worker: Worker; online: Promise<void> } | undefined;
  #nextId = 0;
  // Recent parses: about as many notes as run at once (40), and one large note.
  readonly #recent = new RecentTexts<ParsedNote>(64, 8 * 1024 * 1024);
  readonly #sections = new RecentTexts<ApprovalSectionRead>(64, 8 * 1024 * 1024);
  readonly #pending = new Map<number, Pending>();

  /** @param options thresholds and deadline. */
  constructor(options: NoteWorkerOptions = {}) {
    this.#inlineChars = options.inlineChars ?? 64 * 1024;
    this.#maxSectionCalls = options.maxSectionCalls ?? Infinity;
    this.#timeoutMs = options.timeoutMs ?? 20_000;
  }

  /**
   * Whether a note is parsed and edited in the calling thread: a short note, with short
   * front-matter (long front-matter goes to the YAML library, which reads it slowly).
   */
  isInline(text: string): boolean {
    return text.length <= this.#inlineChars && !hasLongFrontMatter(text);
  }

  /**
   * Parse a note (see `parseNote`).
   * @param text the note.
   * @throws NoteTooComplexError past the deadline.
   */
  async parse(text: string): Promise<ParsedNote> {
    // A note is parsed when it is found and again, unchanged, once claimed.
    const recent = this.#recent.get(text);
    if (recent !== undefined) return recent;
    const parsed = this.isInline(text)
      ? parseNote(text)
      : ((await this.#post({ op: 'parse', text })) as ParsedNote);
    this.#recent.set(text, parsed);
    return parsed;
  }

  /**
   * Read a note's Approval section (see `readApprovalSection`), a large note's in the worker: a
   * note of thousands of pending calls took 280 ms of the main thread, each time the note was
   * looked at (when it arrived in a decision folder, at each reconcile scan, at each refresh of the
   * Dashboard). The last reads are kept: the same text is not read twice.
   * @param text the note.
   * @throws NoteTooComplexError past the deadline.
   */
  async approval(text: string): Promise<ApprovalSectionRead> {
    const recent = this.#sections.get(text);
    if (recent !== undefined) return recent;
    const read =
      text.length <= this.#inlineChars || !/approval/i.test(text)
        ? readApprovalSection(text, this.#maxSectionCalls)
        : ((await this.#post({
            op: 'approval',
            text,
            maxCalls: this.#maxSectionCalls,
          })) as ApprovalSectionRead);
    this.#sections.set(text, read);
    return read;
  }

  /**
   * Apply a write-back to a note (see `applyWriteBack`).
   * @param text the note as it is on disk now.
   * @param edit results, section and front-matter keys.
   * @throws NoteTooComplexError past the deadline.
   */
  async edit(text: string, edit: WriteBackEdit): Promise<EditedText> {
    if (this.isInline(text) && edit.results.length <= INLINE_RESULTS) {
      const out = applyWriteBack(text, edit);
      return new EditedText(out === text, out);
    }
    const packed = (await this.#post({ op: 'edit', text, edit })) as PackEdit;
    return new EditedText(packed.unchanged, packed.bytes);
  }

  /** Stop the worker thread, if one runs. */
  async close(): Promise<void> {
    this.#recent.clear();
    this.#sections.clear();
    const current = this.#worker;
    this.#worker = undefined;
    await current?.worker.terminate();
  }

  /** Hand a job to the worker thread; resolves with what the worker sent back. */
  #post(job: NoteJob): Promise<unknown> {
    const results = job.op === 'edit' ? job.edit.results : [];
    const { worker, online } = this.#ensureWorker();
    const id = this.#nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const pending: Pending = { worker, resolve, reject, timer: undefined };
      this.#pending.set(id, pending);
      if (job.op === 'edit' && results.length > RESULTS_PER_MESSAGE) {
        // Copying a message blocks the sending thread: 60,000 results in one would hold the main
        // thread for over 100 ms. They go in parts, the event loop running between them; the
        // worker's port keeps them in order, and the job itself follows them.
        void postInParts(worker, id, job, results);
      } else {
        worker.postMessage({ id, job });
      }
      // The deadline counts from the worker being up: starting one is not the note's fault.
      void online.then(() => {
        if (!this.#pending.has(id)) return;
        pending.timer = setTimeout(() => {
          this.#pending.delete(id);
          reject(new NoteTooComplexError(job.text.length, this.#timeoutMs));
          // The only way to stop a parse in progress; the other jobs of this worker fail with it
          // and are retried by their notes' next look.
          void this.#restart(worker);
        }, this.#timeoutMs);
      });
    });
  }

  #ensureWorker(): { worker: Worker; online: Promise<void> } {
    if (this.#worker !== undefined) return this.#worker;
    // A small young generation: a large note's tokens live for one parse, and V8's default
    // (16 MB semi-spaces) let a 1 MB note of lists add 84 MB of RSS over a parse and an edit,
    // 45 MB with 4 MB (same time, measured in docs/markdown.md).
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    let markOnline = (): void => undefined;
    const online = new Promise<void>((resolve) => (markOnline = resolve));
    worker.unref();
    worker.on(
      'message',
      (message: {
        id: number;
        ok: boolean;
        value?: unknown;
        error?: string;
        ready?: true;
        part?: ParsePart;
        parts?: true;
      }) => {
        if (message.ready === true) return markOnline();
        const pending = this.#pending.get(message.id);
        if (pending === undefined) return;
        if (message.part !== undefined) {
          // One part of a large parse: take it and ask for the next (see transfer.ts).
          (pending.assembler ??= new ParseAssembler()).add(message.part);
          worker.postMessage({ id: message.id, next: true });
          return;
        }
        this.#pending.delete(message.id);
        clearTimeout(pending.timer);
        if (!message.ok) pending.reject(new Error(message.error));
        else if (message.parts === true && pending.assembler !== undefined)
          pending.resolve(pending.assembler.finish(message.value as ParsedNote));
        else pending.resolve(message.value);
      },
    );
    worker.on('error', (error) => this.#failAll(worker, error));
    worker.on('exit', () => {
      if (this.#worker?.worker === worker) this.#worker = undefined;
      this.#failAll(worker, new Error('the note worker stopped'));
    });
    this.#worker = { worker, online };
    return this.#worker;
  }

  async #restart(worker: Worker): Promise<void> {
    if (this.#worker?.worker === worker) this.#worker = undefined;
    await worker.terminate();
  }

  #failAll(worker: Worker, error: Error): void {
    for (const [id, pending] of this.#pending) {
      if (pending.worker !== worker) continue;
      clearTimeout(pending.timer);
      pending.reject(error);
      this.#pending.delete(id);
    }
  }
}
