import dns from 'node:dns';
import { isIP } from 'node:net';
import { syncBuiltinESMExports } from 'node:module';

/** Options of {@link limitLookups}. */
export interface LookupLimitOptions {
  /** Lookups running at once, at least 1. */
  readonly max: number;
  /**
   * A lookup that waited this long for its turn fails at once instead of starting (default 30 s,
   * a call's timeout): whoever asked has given up by then.
   */
  readonly maxWaitMs?: number;
  /** The lookup to run (tests: one that holds a thread-pool thread as a stuck resolver does). */
  readonly lookup?: typeof dns.lookup;
}

/** What {@link limitLookups} reports. */
export interface LookupLimitStats {
  /** Lookups running now. */
  readonly running: number;
  /** Lookups waiting for their turn. */
  readonly waiting: number;
  /** The most that ever ran at once. */
  readonly mostRunning: number;
}

type Callback = (error: NodeJS.ErrnoException | null, ...rest: unknown[]) => void;

interface Waiting {
  readonly args: unknown[];
  readonly callback: Callback;
  readonly since: number;
}

let limit: Required<LookupLimitOptions> | undefined;
let running = 0;
let mostRunning = 0;
const queue: Waiting[] = [];

/**
 * Cap the DNS lookups in flight at once, for every connection the process makes (`fetch`,
 * `http`, `net`, nodemailer's fallback, plugins).
 *
 * Node resolves a host name with `getaddrinfo`, a job for libuv's thread pool, the same few
 * threads that do all of vaultd's file work. A lookup cannot be cancelled: a host whose name
 * server never answers holds its thread for the resolver's whole timeout (5 s per try by default,
 * and a call's timeout does not free it). Without a cap, an agent asking for as many fetches of such
 * hosts as there are threads stops every note's reads, writes and moves for that long, again and
 * again. With it, lookups never take more than `max` threads; the rest wait their turn, and one
 * that waited `maxWaitMs` fails with `EAI_AGAIN` instead of starting. IP addresses are not looked
 * up, so they never wait.
 *
 * `dns.lookup` is replaced on Node's `dns` module (and its named export), which `net` reads at
 * each connection, and so is `dns.promises.lookup`. Calling again changes the limits; the
 * replacement is made once.
 * @param options the cap and the longest wait.
 */
export function limitLookups(options: LookupLimitOptions): void {
  const installed = limit !== undefined;
  limit = {
    max: Math.max(1, Math.floor(options.max)),
    maxWaitMs: options.maxWaitMs ?? 30_000,
    lookup: options.lookup ?? limit?.lookup ?? dns.lookup,
  };
  if (installed) return;
  const limited = function lookup(this: unknown, ...args: unknown[]): void {
    const callback = args.at(-1);
    const hostname = args[0];
    // Node's own lookup throws its argument errors synchronously; an address needs no resolver.
    if (typeof callback !== 'function' || typeof hostname !== 'string' || isIP(hostname) !== 0) {
      (limit?.lookup as (...a: unknown[]) => void).apply(dns, args);
      return;
    }
    queue.push({ args: args.slice(0, -1), callback: callback as Callback, since: Date.now() });
    startWaiting();
  };
  dns.lookup = limited as unknown as typeof dns.lookup;
  // `dns.promises.lookup` (also `node:dns/promises`) goes through the same queue.
  dns.promises.lookup = ((hostname: string, options?: unknown) =>
    new Promise<unknown>((resolve, reject) => {
      limited(hostname, options ?? {}, (error: Error | null, address: unknown, family: unknown) => {
        if (error !== null) reject(error);
        else resolve(Array.isArray(address) ? address : { address, family });
      });
    })) as unknown as typeof dns.promises.lookup;
  syncBuiltinESMExports();
}

/** The limiter's counters (tests). */
export function lookupStats(): LookupLimitStats {
  return { running, waiting: queue.length, mostRunning };
}

function startWaiting(): void {
  const current = limit;
  if (current === undefined) return;
  while (running < current.max && queue.length > 0) {
    const next = queue.shift() as Waiting;
    running++;
    mostRunning = Math.max(mostRunning, running);
    let done = false;
    const finish: Callback = (error, ...rest) => {
      if (done) return;
      done = true;
      running--;
      startWaiting();
      next.callback(error, ...rest);
    };
    try {
      (current.lookup as (...a: unknown[]) => void).apply(dns, [...next.args, finish]);
    } catch (error) {
      finish(error as NodeJS.ErrnoException);
    }
  }
  scheduleExpiry();
}

let expiry: NodeJS.Timeout | undefined;

// One timer, for the lookup that has waited longest (the queue is in arrival order); unref'd, so
// it never keeps the process up.
function scheduleExpiry(): void {
  clearTimeout(expiry);
  expiry = undefined;
  const first = queue[0];
  if (first === undefined || limit === undefined) return;
  const wait = Math.max(0, first.since + limit.maxWaitMs - Date.now());
  expiry = setTimeout(expireWaiting, wait + 1);
  expiry.unref();
}

function expireWaiting(): void {
  const current = limit;
  if (current === undefined) return;
  const now = Date.now();
  while (queue.length > 0 && now - (queue[0] as Waiting).since >= current.maxWaitMs) {
    const late = queue.shift() as Waiting;
    const error: NodeJS.ErrnoException = Object.assign(
      new Error(
        `DNS lookup of ${String(late.args[0])} waited ${current.maxWaitMs} ms behind ${current.max} that did not finish`,
      ),
      { code: 'EAI_AGAIN', syscall: 'getaddrinfo', hostname: String(late.args[0]) },
    );
    late.callback(error);
  }
  scheduleExpiry();
}
