/**
 * Whether arrays and objects nest deeper than `max` levels in a value (the value itself is level
 * 1), by a walk without recursion. Call arguments and tool data pass through recursive code
 * (canonical JSON, secret redaction, schema validation, JSON rendering, the copy to the note
 * worker): nested thousands deep, they overflowed the stack there.
 * @param value a JSON-like value.
 * @param max the deepest nesting allowed.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  // Most call arguments are flat: no walk, nothing allocated.
  let flat = true;
  for (const key in value) {
    const child = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null) {
      flat = false;
      break;
    }
  }
  if (flat) return max < 1;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (typeof item !== 'object' || item === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(item)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** The deepest nesting of a call's arguments or a tool's data that vaultd keeps as structure. */
export const MAX_NESTING = 256;
