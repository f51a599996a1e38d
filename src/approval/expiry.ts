export { parseDuration } from '../config/duration.ts';

/** The rejection reason of a pending call that waited too long (SPEC section 5). */
export const EXPIRED_REASON = 'approval expired';

/**
 * True when a call that started waiting at `requestedAt` has waited `expireAfterMs` or longer.
 * An unreadable time counts as expired, so no call can wait for ever.
 * @param requestedAt ISO time the call started waiting (take it from the ledger, not the note).
 * @param expireAfterMs how long a call may wait.
 * @param now the current time in ms; defaults to `Date.now()`.
 */
export function isExpired(requestedAt: string, expireAfterMs: number, now = Date.now()): boolean {
  const since = Date.parse(requestedAt);
  if (!Number.isFinite(since)) return true;
  return now - since >= expireAfterMs;
}
