import type { FileHandle } from 'node:fs/promises';
import { constants, copyFile, link, open, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeFileAtomic } from './atomic-write.ts';
import { fsyncDirectory } from './fsync-dir.ts';
import { errnoCode, isVanished, toVaultIoError } from './fs-errors.ts';

/** What opening a journal found wrong with the file, kept aside as evidence. */
export interface JournalDamage {
  /** Lines that could not be read (not counting a torn last line, which a crash leaves). */
  readonly badLines: number;
  /** Where the damaged file was moved, next to the journal. */
  readonly keptAt: string;
  /** The raw text of the unreadable lines (at most 64 KiB), to salvage ids from. */
  readonly badText: string;
}

/** What {@link Journal.open} gives back. */
export interface OpenedJournal<L> {
  readonly journal: Journal<L>;
  /** Every readable line, in file order. */
  readonly lines: readonly L[];
  /** Whether the file existed before (false: created now). */
  readonly existed: boolean;
  /** Set when unreadable lines were found; the file was kept aside and rewritten. */
  readonly damage: JournalDamage | null;
}

interface Pending {
  readonly text: string;
  readonly sync: boolean;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * An append-only file of JSON lines with group commit: appends that arrive while a write is in
 * flight are joined into the next single write (and one fsync when any of them asks for it). A
 * torn last line, left by a crash in the middle of an append, is cut off at open. A file with
 * unreadable lines elsewhere is kept aside (`<name>.damaged-<time>`) and replaced by one of the
 * readable ones, so the evidence survives and appends continue on a clean file. The handle stays
 * open; {@link Journal.isCurrent} tells whether the file at the path is still the one held.
 */
export class Journal<L> {
  readonly path: string;
  #handle: FileHandle;
  #size: number;
  #ino: number;
  #queue: Pending[] = [];
  #scheduled = false;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;

  private constructor(path: string, handle: FileHandle, size: number, ino: number) {
    this.path = path;
    this.#handle = handle;
    this.#size = size;
    this.#ino = ino;
  }

  /**
   * Open (or create) a journal and read its lines.
   * @param path absolute path of the file; its folder must exist.
   * @param parse turns one parsed JSON value into a line, or null when it is not one.
   * @throws VaultIoError when the file cannot be read, kept aside or opened for appending.
   */
  static async open<L>(
    path: string,
    parse: (value: unknown) => L | null,
  ): Promise<OpenedJournal<L>> {
    let content: Buffer | null = null;
    try {
      content = await readFile(path);
    } catch (error) {
      if (!isVanished(error)) throw toVaultIoError('read', path, error);
    }
    const lines: L[] = [];
    const bad: string[] = [];
    let end = 0;
    if (content !== null) {
      end = content.lastIndexOf(0x0a) + 1;
      for (const text of content.subarray(0, end).toString('utf8').split('\n')) {
        if (text.trim() === '') continue;
        const line = parseJsonLine(text, parse);
        if (line === null) bad.push(text);
        else lines.push(line);
      }
    }
    let damage: JournalDamage | null = null;
    if (bad.length > 0 && content !== null) {
      const keptAt = join(
        dirname(path),
        `${basename(path)}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`,
      );
      const clean = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
      // The journal's name is never without a file holding every readable line: the clean lines
      // go to a temp file (fsynced), the damaged original gets a second name, `keptAt` (made
      // durable), and only then does the temp file take the journal's name, by a rename (the
      // folder fsynced after). Renaming the original aside first and writing the clean file
      // after left no file at the name when killed in between: the next start saw an empty,
      // undamaged journal (finished calls ran again, waiting approvals were void). A kill before
      // the last rename leaves the damaged original at the name (perhaps also at `keptAt`, and a
      // temp file the daemon removes at start): the next start finds it damaged again and sets
      // it aside again, under a new time, which loses nothing.
      try {
        await writeFileAtomic(path, clean, { beforeRename: () => keepAside(path, keptAt) });
      } catch (error) {
        throw toVaultIoError('keep aside', path, error);
      }
      content = Buffer.from(clean);
      end = content.length;
      damage = { badLines: bad.length, keptAt, badText: bad.join('\n').slice(0, 65_536) };
    }
    let handle: FileHandle;
    try {
      handle = await open(path, 'a', 0o600);
      // A new file's name must be durable before any fsynced line in it can be.
      if (content === null) await fsyncDirectory(dirname(path));
      if (content !== null && end < content.length) await handle.truncate(end);
    } catch (error) {
      throw toVaultIoError('open', path, error);
    }
    const ino = (await handle.stat()).ino;
    return {
      journal: new Journal<L>(path, handle, end, ino),
      lines,
      existed: content !== null,
      damage,
    };
  }

  /** Bytes in the file, as far as this journal wrote them. */
  get size(): number {
    return this.#size;
  }

  /**
   * Append one line; resolves once it is written (and fsynced when `sync`).
   * @param line the value, written as one JSON line.
   * @param sync fsync before resolving (an intent that must survive a power cut).
   * @throws VaultIoError when the write failed: the line is then not in the file.
   */
  append(line: L, sync: boolean): Promise<void> {
    if (this.#closed) return Promise.reject(new Error(`journal ${this.path} is closed`));
    return new Promise((resolve, reject) => {
      this.#queue.push({ text: `${JSON.stringify(line)}\n`, sync, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        void this.#enqueue(() => this.#flush());
      }
    });
  }

  /**
   * Replace the whole file with the lines `build` gives, atomically, after the appends in flight.
   * `build` is asked only once those are written and their writers have counted them: lines
   * taken before would leave out an append written to the old file just before the rename (an
   * intent made durable, its call run, then erased: the call ran again after a restart).
   * Appends queued meanwhile are written to the new file after it.
   * @param build what the file should hold, from the writer's state at that moment.
   * @throws VaultIoError when the new file cannot be written; the old one is then kept.
   */
  rewrite(build: () => readonly L[]): Promise<void> {
    if (this.#closed) return Promise.reject(new Error(`journal ${this.path} is closed`));
    return this.#enqueue(async () => {
      await this.#flush();
      // The flushed appends resolved; their writers record them in memory in a microtask, which
      // runs before this immediate.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const lines = build();
      const text = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
      // The new file is opened for appending before it takes the journal's name: once it has the
      // name, appends go to it whatever fails after (a failed reopen kept appends going to the
      // old file, no longer on disk, where a restart never reads them).
      let next: { handle: FileHandle; ino: number } | undefined;
      try {
        await writeFileAtomic(this.path, text, {
          fsyncDir: false,
          beforeRename: async (temp) => {
            const handle = await open(temp, 'a', 0o600);
            try {
              next = { handle, ino: (await handle.stat()).ino };
            } catch (error) {
              await handle.close().catch(() => undefined);
              throw error;
            }
          },
        });
      } catch (error) {
        await next?.handle.close().catch(() => undefined);
        throw error;
      }
      if (next === undefined) throw new Error('the compacted journal was not opened');
      await this.#handle.close().catch(() => undefined);
      this.#handle = next.handle;
      this.#ino = next.ino;
      this.#size = Buffer.byteLength(text);
      await fsyncDirectory(dirname(this.path));
    });
  }

  /**
   * Whether the file at the path is still the one this journal appends to (not deleted, not
   * replaced by another file).
   */
  async isCurrent(): Promise<boolean> {
    try {
      return (await stat(this.path)).ino === this.#ino;
    } catch (error) {
      if (isVanished(error) || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
      throw toVaultIoError('stat', this.path, error);
    }
  }

  /** Wait for every append queued so far. */
  async drain(): Promise<void> {
    await this.#enqueue(() => this.#flush());
  }

  /** Write what is queued and close the file; later appends reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#enqueue(() => this.#flush()).catch(() => undefined);
    await this.#handle.close().catch(() => undefined);
  }

  #enqueue(operation: () => Promise<void>): Promise<void> {
    const result = this.#chain.then(operation);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return;
    const data = Buffer.from(batch.map((p) => p.text).join(''), 'utf8');
    try {
      await this.#handle.writeFile(data);
      if (batch.some((p) => p.sync)) await this.#handle.datasync();
    } catch (error) {
      // Cut off whatever part of the batch reached the file, so the next append starts clean.
      await this.#handle.truncate(this.#size).catch(() => undefined);
      const failure = toVaultIoError('append', this.path, error);
      for (const pending of batch) pending.reject(failure);
      return;
    }
    this.#size += data.length;
    for (const pending of batch) pending.resolve();
  }
}

// What link() gives on a file system without hard links (FAT, some network and FUSE ones).
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

/**
 * Give a damaged journal a second name, `keptAt`, leaving it at its own: a hard link, or a copy
 * (fsynced) where the file system has none; the folder is fsynced, so the kept file survives a
 * power cut before the journal's name goes to the clean file.
 * @param path the damaged journal.
 * @param keptAt the name to keep it under, in the same folder; must not exist.
 */
async function keepAside(path: string, keptAt: string): Promise<void> {
  try {
    await link(path, keptAt);
  } catch (error) {
    if (!NO_HARD_LINKS.has(errnoCode(error) ?? '')) throw error;
    await copyFile(path, keptAt, constants.COPYFILE_EXCL);
    const copy = await open(keptAt, 'r');
    try {
      await copy.sync();
    } finally {
      await copy.close();
    }
  }
  await fsyncDirectory(dirname(path));
}

function parseJsonLine<L>(text: string, parse: (value: unknown) => L | null): L | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return parse(value);
}
