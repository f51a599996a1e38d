/**
 * The values last computed from some texts (a note's structure, its parse), newest last, up to a
 * number of entries and of characters in all: a note is read again, unchanged, when it is claimed
 * and when its results are written back. Looked up by a fingerprint (the length and 16 of the
 * characters), then by comparing the text (one memcmp): hashing a fresh note's text for a Map key
 * cost as much as a fifth of reading a 100 KB note, and notes of one template, which differ only
 * near their end, made every lookup compare nearly all of each kept text. Values are shared:
 * callers never modify them.
 */
export class RecentTexts<T> {
  readonly #entries: { text: string; print: number; value: T }[] = [];
  #chars = 0;

  /**
   * @param maxEntries entries kept at most.
   * @param maxChars characters kept at most, all entries together; a longer text is not kept.
   * @param largeChars a text longer than this is large, and only the newest large text is kept:
   *   what is kept stays live for the garbage collector to trace, and eight 1 MB notes' structures
   *   kept at once made a 1 MB parse a third slower (bench/README.md, item 28).
   */
  constructor(
    readonly maxEntries: number,
    readonly maxChars: number,
    readonly largeChars = Infinity,
  ) {}

  /** The value kept for `text`, if any. */
  get(text: string): T | undefined {
    if (this.#entries.length === 0) return undefined;
    const print = fingerprint(text);
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i] as { text: string; print: number; value: T };
      if (entry.print === print && entry.text === text) return entry.value;
    }
    return undefined;
  }

  /** Keep `value` for `text`, dropping the oldest entries past the limits. */
  set(text: string, value: T): void {
    if (text.length > this.maxChars) return;
    if (text.length > this.largeChars) {
      for (let i = this.#entries.length - 1; i >= 0; i--) {
        const entry = this.#entries[i] as { text: string };
        if (entry.text.length <= this.largeChars) continue;
        this.#chars -= entry.text.length;
        this.#entries.splice(i, 1);
      }
    }
    this.#entries.push({ text, print: fingerprint(text), value });
    this.#chars += text.length;
    while (this.#entries.length > this.maxEntries || this.#chars > this.maxChars) {
      this.#chars -= this.#entries.shift()?.text.length ?? 0;
    }
  }

  /** Forget everything. */
  clear(): void {
    this.#entries.length = 0;
    this.#chars = 0;
  }
}

/** The length and 16 characters: 8 spread over the text and its last 8 (where notes of one template differ). */
function fingerprint(text: string): number {
  const length = text.length;
  let print = length;
  for (let k = 0; k < 8 && length > 0; k++) {
    print = (Math.imul(print, 31) + text.charCodeAt(Math.floor((k * length) / 8))) | 0;
  }
  for (let i = Math.max(0, length - 8); i < length; i++) {
    print = (Math.imul(print, 31) + text.charCodeAt(i)) | 0;
  }
  return print;
}
