const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** The accepted spelling of a duration: digits and one unit (`ms`, `s`, `m`, `h`, `d`, `w`). */
export const DURATION_PATTERN = '^[0-9]+(ms|s|m|h|d|w)$';

/**
 * Parse a duration such as `7d`, `12h` or `1500ms` into milliseconds.
 * @param text the duration as written in config.
 * @returns milliseconds, or null when `text` does not match {@link DURATION_PATTERN}.
 */
export function parseDuration(text: string): number | null {
  const match = /^([0-9]+)(ms|s|m|h|d|w)$/.exec(text);
  if (match === null) return null;
  const unit = UNIT_MS[match[2] as string] as number;
  const ms = Number(match[1]) * unit;
  return Number.isSafeInteger(ms) ? ms : null;
}
