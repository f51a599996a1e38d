import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** One always-allow grant, as stored in `grants.json` and listed by the CLI. */
export interface Grant {
  readonly tool: string;
  /** ISO time of the decision. */
  readonly granted_at: string;
  /** Who granted it, e.g. `human` (a ticked box) or `cli`. */
  readonly by: string;
  /** The vault-relative note the box was ticked in, when there was one. */
  readonly note: string | null;
}

/** Options of {@link GrantStore.add}. */
export interface AddGrantOptions {
  readonly by: string;
  readonly note?: string | undefined;
  /** Time of the grant; defaults to now. */
  readonly now?: Date;
}

/** The file name of the grants inside the state directory. */
export const GRANTS_FILE = 'grants.json';

const TOOL_NAME = /^[a-z][a-z0-9_]*$/;

/** The error for a `grants.json` that cannot be read as grants; `path` names the file. */
export class GrantsFileError extends Error {
  readonly path: string;

  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super(`${path}: ${problem}`, options);
    this.name = 'GrantsFileError';
    this.path = path;
  }
}

/**
 * Always-allow grants persisted at `<stateDir>/grants.json`, written atomically (temp file, fsync,
 * rename). Another process (the CLI's `vaultd grants revoke`) may edit the file while the daemon
 * runs: every read (`has`, `list`) first compares the file's identity (inode, size, mtime) with
 * the one last loaded and reloads when it changed, and every write re-reads the file first.
 * A file that turns unreadable while running counts as no grants (calls ask again) and is
 * reported through `problem`; writes then refuse rather than overwrite it.
 */
export class GrantStore {
  /** Absolute path of `grants.json`. */
  readonly path: string;
  readonly #stateDir: string;
  #grants = new Map<string, Grant>();
  #stamp = '';
  #problem: string | null = null;

  private constructor(stateDir: string) {
    this.#stateDir = stateDir;
    this.path = join(stateDir, GRANTS_FILE);
  }

  /**
   * Open the grants of a state directory; a missing file means no grants.
   * @param stateDir the daemon's state directory (`<vault>/.vaultd`); created on the first write.
   * @throws GrantsFileError when the file exists but is not a grants file.
   */
  static open(stateDir: string): GrantStore {
    const store = new GrantStore(stateDir);
    store.reload();
    if (store.#problem !== null) throw new GrantsFileError(store.path, store.#problem);
    return store;
  }

  /** Why the file could not be read at the last reload, or null when it was fine. */
  get problem(): string | null {
    return this.#problem;
  }

  /**
   * True when `tool` has an always-allow grant, after reloading the file if it changed.
   * @param tool the tool name.
   */
  has(tool: string): boolean {
    this.#refresh();
    return this.#grants.has(tool);
  }

  /**
   * Every grant, sorted by tool name, after reloading the file if it changed.
   */
  list(): Grant[] {
    this.#refresh();
    return [...this.#grants.values()].sort((a, b) =>
      a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0,
    );
  }

  /**
   * Record an always-allow grant (replacing an earlier one for the same tool) and save it.
   * @param tool a tool name (`^[a-z][a-z0-9_]*$`; no globs: a grant names one tool).
   * @param options who granted it, from which note, and when (default now).
   */
  add(tool: string, options: AddGrantOptions): Grant {
    if (!TOOL_NAME.test(tool))
      throw new TypeError(`cannot grant ${JSON.stringify(tool)}: not a tool name`);
    this.#loadForWrite();
    const grant: Grant = Object.freeze({
      tool,
      granted_at: (options.now ?? new Date()).toISOString(),
      by: options.by,
      note: options.note ?? null,
    });
    this.#grants.set(tool, grant);
    this.#save();
    return grant;
  }

  /**
   * Remove the grant of a tool and save; false when there was none.
   * @param tool the tool name.
   */
  revoke(tool: string): boolean {
    this.#loadForWrite();
    if (!this.#grants.delete(tool)) return false;
    this.#save();
    return true;
  }

  /** Read the file again now, whether or not it looks changed. */
  reload(): void {
    this.#stamp = stampOf(this.path);
    const text = readText(this.path);
    if (text === null) {
      this.#grants = new Map();
      this.#problem = null;
      return;
    }
    const parsed = parseGrants(text);
    if (typeof parsed === 'string') {
      this.#grants = new Map();
      this.#problem = parsed;
    } else {
      this.#grants = parsed;
      this.#problem = null;
    }
  }

  #refresh(): void {
    if (stampOf(this.path) !== this.#stamp) this.reload();
  }

  #loadForWrite(): void {
    this.reload();
    if (this.#problem !== null) {
      throw new GrantsFileError(
        this.path,
        `${this.#problem}; fix or delete the file, then try again`,
      );
    }
  }

  #save(): void {
    mkdirSync(this.#stateDir, { recursive: true });
    const body = { version: 1, grants: [...this.#grants.values()] };
    const temp = join(
      this.#stateDir,
      `.${GRANTS_FILE}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
    );
    try {
      const fd = openSync(temp, 'w', 0o600);
      try {
        writeSync(fd, `${JSON.stringify(body, null, 2)}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, this.path);
    } catch (error) {
      rmSync(temp, { force: true });
      throw new GrantsFileError(this.path, 'could not save the grants', { cause: error });
    }
    syncDirectory(this.#stateDir);
    this.#stamp = stampOf(this.path);
  }
}

function stampOf(path: string): string {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch (error) {
    if (isMissing(error)) return 'missing';
    throw error;
  }
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

function parseGrants(text: string): Map<string, Grant> | string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return `not valid JSON (${(error as Error).message})`;
  }
  const list = isRecord(data) ? data['grants'] : undefined;
  if (!Array.isArray(list)) return 'expected {"version": 1, "grants": [...]}';
  const grants = new Map<string, Grant>();
  for (const [index, entry] of list.entries()) {
    if (!isRecord(entry) || typeof entry['tool'] !== 'string' || !TOOL_NAME.test(entry['tool'])) {
      return `grants[${index}] has no valid "tool" name`;
    }
    const note = entry['note'];
    grants.set(
      entry['tool'],
      Object.freeze({
        tool: entry['tool'],
        granted_at: typeof entry['granted_at'] === 'string' ? entry['granted_at'] : '',
        by: typeof entry['by'] === 'string' ? entry['by'] : 'unknown',
        note: typeof note === 'string' ? note : null,
      }),
    );
  }
  return grants;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

// Make the rename durable; some platforms refuse to open a directory, which is harmless here.
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Best effort only: the rename itself already happened.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
