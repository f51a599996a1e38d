/**
 * Freeze an object and everything reachable from it, in place.
 * @param value a plain data tree (no cycles).
 * @returns the same value, typed as read-only.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
