/** The accepted spelling of a duration in config: numbers with units (`7d`, `1h30m`, `500ms`). */
export const DURATION_PATTERN = '^\\s*(\\d+(\\.\\d+)?\\s*(ms|s|m|h|d|w)\\s*)+$';

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * Parse a duration such as `7d`, `12h`, `30m`, `45s`, `500ms`, `1.5h` or `1h30m` into
 * milliseconds (units ms, s, m, h, d, w; a bare number is milliseconds).
 * @param text the duration as written in config.
 * @throws RangeError quoting the text when it is not a duration.
 */
export function parseDuration(text: string | number): number {
  if (typeof text === 'number') {
    if (Number.isFinite(text) && text >= 0) return text;
    throw new RangeError(
      `${JSON.stringify(text)} is not a duration; write e.g. "7d", "12h", "30m", "45s" or "500ms"`,
    );
  }
  const source = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(source)) return Number(source);
  const part = /(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)/gy;
  let total = 0;
  let end = 0;
  for (let match = part.exec(source); match !== null; match = part.exec(source)) {
    total += Number(match[1]) * (UNITS[match[2] ?? ''] ?? Number.NaN);
    end = part.lastIndex;
    while (source[end] === ' ') end += 1;
    part.lastIndex = end;
  }
  if (source === '' || end !== source.length || !Number.isFinite(total)) {
    throw new RangeError(
      `${JSON.stringify(text)} is not a duration; write e.g. "7d", "12h", "30m", "45s" or "500ms"`,
    );
  }
  return Math.round(total);
}
