// How a large note's parse and edit cross between the note worker and the main thread without
// holding the main thread. A message is copied (structured clone) in one go on the thread that
// sends it and again on the one that receives it: a 5 MB note of 60,000 calls took 140 ms to
// receive as a parse and 240 ms as an edited text of 47 MB, each in one piece on the main thread
// (SPEC section 6: no task may block it for more than 50 ms).
import type { Diagnostic, FoundCall, FoundResult, InvalidBlock, ParsedNote } from './types.ts';

/** Items (calls, bad blocks, results, diagnostics) per part of a split parse. */
const ITEMS_PER_PART = 500;
/** A parse with at most this many items crosses in one message. */
const SPLIT_OVER = 2_000;

const encoder = new TextEncoder();
// ignoreBOM: a note's byte order mark is part of its text and is kept (the default strips it).
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** A note's new text from an edit, as text or as UTF-8 bytes, each made when first asked for. */
export class EditedText {
  /** Whether the edit changed nothing (the text is the one edited). */
  readonly unchanged: boolean;
  #text: string | undefined;
  #bytes: Uint8Array | undefined;

  /**
   * @param unchanged whether the edit changed nothing.
   * @param value the text, or its UTF-8 bytes.
   */
  constructor(unchanged: boolean, value: string | Uint8Array) {
    this.unchanged = unchanged;
    if (typeof value === 'string') this.#text = value;
    else this.#bytes = value;
  }

  /** The text (decoded from the bytes the first time, when it came as bytes). */
  get text(): string {
    this.#text ??= decoder.decode(this.#bytes);
    return this.#text;
  }

  /** The UTF-8 bytes, the form a file is written in. */
  get bytes(): Uint8Array {
    this.#bytes ??= encoder.encode(this.#text);
    return this.#bytes;
  }
}

/** An edit as it crosses. */
export interface PackEdit {
  readonly bytes: Uint8Array;
  readonly unchanged: boolean;
}

/**
 * The worker's side of an edit: the new text as UTF-8 bytes in a buffer of their own, so the
 * message moves the buffer instead of copying 47 MB, and the main thread writes the bytes as they
 * are.
 * @param before the text that was edited.
 * @param after the edited text.
 */
export function packEdit(before: string, after: string): PackEdit {
  return { bytes: encoder.encode(after), unchanged: after === before };
}

/** One part of a large parse's lists. */
export interface ParsePart {
  readonly c?: readonly FoundCall[];
  readonly i?: readonly InvalidBlock[];
  readonly r?: readonly (readonly [string, FoundResult])[];
  readonly d?: readonly Diagnostic[];
}

/**
 * The worker's side of a parse. A parse of more than {@link SPLIT_OVER} items (calls, bad blocks,
 * results, diagnostics) crosses as its head (the parse with empty lists) and parts of at most
 * {@link ITEMS_PER_PART} items. The worker sends one part at a time and the next only when the
 * main thread has taken the last (see off-thread.ts): a port hands the receiving thread all the
 * messages waiting for it in one go, so parts sent at once would be read as one long block.
 * @param parsed the parse.
 * @returns the head and the parts, or null when the parse crosses whole.
 */
export function splitParse(
  parsed: ParsedNote,
): { readonly head: ParsedNote; readonly parts: ParsePart[] } | null {
  const count =
    parsed.calls.length + parsed.invalid.length + parsed.results.size + parsed.diagnostics.length;
  if (count <= SPLIT_OVER) return null;
  const parts: ParsePart[] = [];
  const results = [...parsed.results];
  for (let at = 0; at < parsed.calls.length; at += ITEMS_PER_PART)
    parts.push({ c: parsed.calls.slice(at, at + ITEMS_PER_PART) });
  for (let at = 0; at < parsed.invalid.length; at += ITEMS_PER_PART)
    parts.push({ i: parsed.invalid.slice(at, at + ITEMS_PER_PART) });
  for (let at = 0; at < results.length; at += ITEMS_PER_PART)
    parts.push({ r: results.slice(at, at + ITEMS_PER_PART) });
  for (let at = 0; at < parsed.diagnostics.length; at += ITEMS_PER_PART)
    parts.push({ d: parsed.diagnostics.slice(at, at + ITEMS_PER_PART) });
  const head: ParsedNote = {
    ...parsed,
    calls: [],
    invalid: [],
    results: new Map(),
    diagnostics: [],
  };
  return { head, parts };
}

/** The main thread's side of a split parse: takes the parts as they come, then the head. */
export class ParseAssembler {
  readonly #calls: FoundCall[] = [];
  readonly #invalid: InvalidBlock[] = [];
  readonly #results = new Map<string, FoundResult>();
  readonly #diagnostics: Diagnostic[] = [];

  /** @param part the next part. */
  add(part: ParsePart): void {
    for (const item of part.c ?? []) this.#calls.push(item);
    for (const item of part.i ?? []) this.#invalid.push(item);
    for (const [key, value] of part.r ?? []) this.#results.set(key, value);
    for (const item of part.d ?? []) this.#diagnostics.push(item);
  }

  /** @param head the parse with empty lists, sent after the last part. */
  finish(head: ParsedNote): ParsedNote {
    return {
      ...head,
      calls: this.#calls,
      invalid: this.#invalid,
      results: this.#results,
      diagnostics: this.#diagnostics,
    };
  }
}
