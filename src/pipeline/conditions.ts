import { errnoCode } from '../vault/fs-errors.ts';

/** Errno codes of an infrastructure problem: the note waits, it does not fail. */
const INFRASTRUCTURE = new Set([
  'ENOSPC',
  'EDQUOT',
  'EACCES',
  'EPERM',
  'EROFS',
  'EIO',
  'ENOENT',
  'ENOTDIR',
  'EMFILE',
  'ENFILE',
  'EBUSY',
  'EAGAIN',
  'ESTALE',
  'ENOTCONN',
  // One of vaultd's folders is a symbolic link or resolves outside the vault (an agent replaced
  // it): nothing is moved or written into it; the note waits where it is until a person fixes it.
  'EOUTSIDE',
]);

/**
 * Whether an error is the file system's (disk full, no permission, a vanished folder, I/O): such a
 * failure leaves every file where it was and the note is tried again later.
 * @param error any thrown value.
 */
export function isInfrastructureError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const code = errnoCode(current);
    if (code !== undefined && INFRASTRUCTURE.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** One condition the daemon reports while it lasts. */
export interface Condition {
  /** The errno code or a name, e.g. `ENOSPC`, `vault_unavailable`, `lock_lost`. */
  readonly code: string;
  readonly message: string;
  /** ISO time it was first seen. */
  readonly since: string;
  /** How many times it was seen. */
  readonly count: number;
}

/**
 * The infrastructure conditions the daemon is working around (disk full, a folder without
 * permission, the vault gone): shown in `/health` and metrics, logged when they start and end.
 */
export class Conditions {
  readonly #current = new Map<string, Condition>();
  readonly #onChange: (event: 'start' | 'end', condition: Condition) => void;

  /** @param onChange told when a condition starts or ends. */
  constructor(onChange: (event: 'start' | 'end', condition: Condition) => void = () => undefined) {
    this.#onChange = onChange;
  }

  /**
   * Report that a condition holds.
   * @param code what it is.
   * @param message details for people.
   */
  report(code: string, message: string): void {
    const before = this.#current.get(code);
    const condition: Condition = {
      code,
      message,
      since: before?.since ?? new Date().toISOString(),
      count: (before?.count ?? 0) + 1,
    };
    this.#current.set(code, condition);
    if (before === undefined) this.#onChange('start', condition);
  }

  /**
   * Report that a condition, or every condition of errno codes, is over.
   * @param code one condition; all errno-coded ones when omitted.
   */
  clear(code?: string): void {
    for (const [key, condition] of this.#current) {
      if (code !== undefined ? key !== code : !/^E[A-Z]+$/.test(key)) continue;
      this.#current.delete(key);
      this.#onChange('end', condition);
    }
  }

  /** Whether a condition of this code holds. */
  has(code: string): boolean {
    return this.#current.has(code);
  }

  /** The conditions that hold now. */
  list(): Condition[] {
    return [...this.#current.values()];
  }
}
