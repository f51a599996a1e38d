/**
 * The longest file name Linux file systems take (`NAME_MAX`), in bytes of UTF-8: 255 ASCII
 * characters, 85 Chinese or Japanese ones.
 */
const NAME_MAX_BYTES = 255;

/**
 * `stem + rest`, the stem cut short (at a character, never inside one) when the whole would be
 * longer than `max` bytes of UTF-8: the names vaultd makes from a note's name (a numbered name
 * for a taken one, a temp file) must be names the file system takes, or the note could never be
 * moved. (A claim whose tagged name would be too long keeps the note's own name instead: see
 * `claimNote`.)
 * @param stem the part that may be cut.
 * @param rest the part kept whole (a suffix and the extension).
 * @param max the most bytes.
 */
export function fitName(stem: string, rest: string, max = NAME_MAX_BYTES): string {
  const whole = stem + rest;
  if (Buffer.byteLength(whole) <= max) return whole;
  let budget = max - Buffer.byteLength(rest);
  let end = 0;
  for (const char of stem) {
    const bytes = Buffer.byteLength(char);
    if (bytes > budget) break;
    budget -= bytes;
    end += char.length;
  }
  return stem.slice(0, end) + rest;
}

/**
 * Whether `name` is longer than the file system takes.
 * @param name a file name.
 */
export function isTooLong(name: string): boolean {
  return Buffer.byteLength(name) > NAME_MAX_BYTES;
}

/**
 * Whether a listed file name may stand for one that is not valid UTF-8: Node.js lists such a name
 * with replacement characters (U+FFFD), a name no file has, so the note cannot be opened by it.
 * @param name a file name or path as listed.
 */
export function mayBeUndecoded(name: string): boolean {
  return name.includes('\uFFFD');
}
