import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { errnoCode } from './fs-errors.ts';

/** Who a process is, well enough to tell it from a later process that got the same pid. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly hostname: string;
  /** Start time in clock ticks since boot (`/proc/<pid>/stat` field 22); null where unknown. */
  readonly start: number | null;
  /** The kernel's boot id; '' where unknown. */
  readonly boot: string;
}

let bootIdCache: string | undefined;

/** The kernel's boot id (Linux `/proc/sys/kernel/random/boot_id`), or '' elsewhere. */
export function bootId(): string {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootIdCache = '';
    }
  }
  return bootIdCache;
}

/**
 * When a process started, in clock ticks since boot, from `/proc/<pid>/stat`.
 * @param pid the process.
 * @returns the start time, or null when the process does not exist or /proc is unavailable.
 */
export function processStart(pid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const start = Number(fields[19]);
  return Number.isFinite(start) ? start : null;
}

let selfCache: ProcessIdentity | undefined;

/** This process's identity. */
export function selfIdentity(): ProcessIdentity {
  selfCache ??= Object.freeze({
    pid: process.pid,
    hostname: hostname(),
    start: processStart(process.pid),
    boot: bootId(),
  });
  return selfCache;
}

/**
 * Whether the process an identity names is running now. A process on another host cannot be
 * checked and counts as alive; one from another boot, or whose pid now belongs to a process that
 * started at another time, is gone.
 * @param identity as recorded by that process.
 */
export function isProcessAlive(identity: ProcessIdentity): boolean {
  const self = selfIdentity();
  if (identity.hostname !== self.hostname) return true;
  if (identity.boot !== '' && self.boot !== '' && identity.boot !== self.boot) return false;
  if (identity.start !== null) {
    const now = processStart(identity.pid);
    if (now !== null) return now === identity.start;
    if (self.start !== null) return false; // /proc works here, and has no such process
  }
  try {
    process.kill(identity.pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === 'EPERM';
  }
}
