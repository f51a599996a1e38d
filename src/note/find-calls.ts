import { MAX_NESTING, nestsDeeperThan } from '../protocol/depth.ts';
import { EXPLICIT_ID, callIdOfCanonical, canonicalCall, deriveBlockId } from './call-id.ts';
import { readFrontMatterSpan } from './front-matter.ts';
import { findOwnedRanges, readStructure } from './markdown.ts';
import type { FenceBlock } from './markdown.ts';
import { hashArguments } from '../protocol/hash-arguments.ts';
import { makePlacer } from './places.ts';
import type { Placer } from './places.ts';
import type { Diagnostic, FoundCall, FoundResult, InvalidBlock, ParsedNote } from './types.ts';

const TOOL_NAME = /^[a-z][a-z0-9_]*$/;
const CALL_KEY_SET: ReadonlySet<string> = new Set(['name', 'parameters', 'arguments', 'id']);
const ONLY_TOOL_CALL: ReadonlySet<string> = new Set(['tool_call']);
const NONE: readonly string[] = [];

/** The own keys of an object that are not in `allowed`, in order; a shared empty list if none. */
function keysOutside(
  value: Record<string, unknown>,
  allowed: ReadonlySet<string>,
): readonly string[] {
  for (const key in value) {
    if (Object.hasOwn(value, key) && !allowed.has(key))
      return Object.keys(value).filter((k) => !allowed.has(k));
  }
  return NONE;
}
const SHAPE = '{"tool_call": {"name": "tool_name", "parameters": {...}}}';

/**
 * Cheap pre-check: whether a note may contain a tool call at all; notes without are never parsed.
 * @param text The note's text.
 */
export function mightHaveToolCall(text: string): boolean {
  return text.includes('tool_call');
}

/**
 * Parses a note: its front-matter (never evaluated), its `tool_call` blocks in block order, the
 * invalid ones, the `tool_result` blocks already written back, and diagnostics with places.
 * Blocks inside vaultd's own sections are never calls. Never throws, whatever the input.
 * @param text The note's text (any size; the caller enforces a cap).
 */
export function parseNote(text: string): ParsedNote {
  try {
    return parseNoteOrThrow(text);
  } catch (error) {
    const place = makePlacer(text);
    const message = `vaultd could not parse the note: ${(error as Error)?.message ?? String(error)}`;
    return {
      ...emptyNote(),
      diagnostics: [
        { severity: 'error', code: 'note-not-parsed', message, start: place(0), end: place(0) },
      ],
    };
  }
}

function emptyNote(): ParsedNote {
  return {
    frontMatter: null,
    data: {},
    calls: [],
    invalid: [],
    results: new Map(),
    diagnostics: [],
  };
}

function parseNoteOrThrow(text: string): ParsedNote {
  const structure = readStructure(text);
  // The structure's line starts, unless a BOM moved its first line's start past offset 0.
  const place = makePlacer(text, structure.lineStarts[0] === 0 ? structure.lineStarts : undefined);
  const span = structure.frontMatter;
  const front = readFrontMatterSpan(text, span, place);
  const diagnostics: Diagnostic[] = [...front.diagnostics];
  const note = { ...emptyNote(), frontMatter: span, data: front.data, diagnostics };
  const scan = new BlockScanner(text, place, diagnostics);
  const owned = findOwnedRanges(structure, text.length);
  for (const fence of structure.fences) {
    if (fence.lang !== 'json') continue;
    scan.visit(fence, inRanges(owned, fence.start));
  }
  return { ...note, calls: scan.calls, invalid: scan.invalid, results: scan.results };
}

/** Whether `offset` is in one of `ranges` ([start, end) each); no closure made per block. */
function inRanges(ranges: readonly (readonly [number, number])[], offset: number): boolean {
  for (const [start, end] of ranges) if (offset >= start && offset < end) return true;
  return false;
}

type Parsed = { ok: true; value: unknown } | { ok: false; reason: string; position: number };

class BlockScanner {
  readonly calls: FoundCall[] = [];
  readonly invalid: InvalidBlock[] = [];
  readonly results = new Map<string, FoundResult>();
  // Derived ids: the first call of each id (its index in `calls`), found by 28 bits of the id;
  // and how many times each call written more than once was seen, by its canonical text. Keyed
  // by the id, not by the canonical text, so that a note of 10,000 different calls keeps no text
  // of each until the parse ends (bench/README.md, item 48); and by numbers in a typed array, not
  // by the id's string in a Map, whose table for a 1 MB note (in the old generation by then)
  // pointed from every entry to a string in the young one, for each scavenge to visit (item 54).
  readonly #firstCalls = new FirstCalls();
  readonly #repeats = new Map<string, number>();
  readonly #seenBlocks = new Map<string, number>();
  readonly #explicitIds = new Set<string>();

  constructor(
    readonly text: string,
    readonly place: Placer,
    readonly diagnostics: Diagnostic[],
  ) {}

  visit(fence: FenceBlock, owned: boolean): void {
    const value = fence.value;
    const mentionsCall = value.includes('tool_call');
    if (!mentionsCall && !value.includes('tool_result')) return;
    const from = fence.start;
    const to = fence.end;
    const parsed = fence.closed ? parseJson(value) : null;
    if (parsed?.ok === true && isRecord(parsed.value) && 'tool_result' in parsed.value) {
      if (!('tool_call' in parsed.value)) this.#addResult(parsed.value.tool_result);
      if (!mentionsCall || !('tool_call' in parsed.value)) return;
    }
    if (!mentionsCall) return;
    const start = this.place(from);
    const end = this.place(to);
    if (owned) {
      const message =
        'a tool_call block inside the ## Tool Results or ## Approval section is ignored; move it above that section or under a new ## heading';
      this.diagnostics.push({
        severity: 'warning',
        code: 'call-in-vaultd-section',
        message,
        start,
        end,
      });
      return;
    }
    if (parsed === null) {
      const marker = fence.marker;
      const message = `the ${marker}json block at line ${start.line} is not closed; end it with a line ${marker} (vaultd waits while the note may still be being written)`;
      // A top-level fence left open runs to the end of the note, and vaultd's write-back closes it
      // to put its section after it: the call in it must not read as a new call then.
      const whole = fence.depth === 0 ? parseJson(value) : null;
      const call = whole?.ok === true ? readCall(whole.value) : null;
      if (call !== null && !('problem' in call)) {
        const id = this.#idOf(call);
        if (id !== null) {
          const argsHash = hashArguments(call.args);
          const block = { id, name: call.name, code: 'INVALID_CALL' as const, message };
          this.#pushInvalid({ ...block, unclosed: true, argsHash, start, end }, start);
          return;
        }
      }
      this.#addInvalid(value, undefined, 'INVALID_CALL', message, true, start, end);
      return;
    }
    if (!parsed.ok) {
      const at = this.#placeInBlock(fence, parsed.position);
      const message = `the tool_call block is not valid JSON: ${parsed.reason} at line ${at.line}, column ${at.column}; write it as ${SHAPE}`;
      this.#addInvalid(value, undefined, 'INVALID_JSON', message, false, start, end, at);
      return;
    }
    const call = readCall(parsed.value);
    if ('problem' in call) {
      this.#addInvalid(
        value,
        call.name,
        'INVALID_CALL',
        call.problem,
        false,
        start,
        end,
        start,
        call.id,
      );
      return;
    }
    const id = this.#idOf(call);
    if (id === null) {
      const message = `tool_call.id ${JSON.stringify(call.id)} is already used by an earlier call in this note; give each call its own id`;
      this.#addInvalid(value, call.name, 'INVALID_CALL', message, false, start, end);
      return;
    }
    this.calls.push({
      id,
      explicitId: call.id !== undefined,
      name: call.name,
      arguments: call.args,
      start,
      end,
    });
  }

  /**
   * The id of a call that comes next in the note: its own (null when an earlier call has it), or
   * one derived from its name and arguments and how many times the same call came before. Kept
   * for the next index of `calls`: a call that is not pushed there must be the note's last (an
   * open fence at the end).
   */
  #idOf(call: {
    id?: string | undefined;
    name: string;
    args: Record<string, unknown>;
  }): string | null {
    if (call.id !== undefined) {
      if (this.#explicitIds.has(call.id)) return null;
      this.#explicitIds.add(call.id);
      return call.id;
    }
    const key = canonicalCall(call.name, call.args);
    let id = callIdOfCanonical(key, 0);
    const bits = idBits(id);
    const first = this.#firstCalls.firstOf(bits, this.calls.length);
    if (first >= 0) {
      // The same bits as an earlier call: the same call again, or another one whose id shares
      // those 28 bits (about one note in five of 10,000 different calls has a pair) or, once
      // in 2^48, its whole hash; counted by its canonical text, which tells them apart.
      let occurrence = this.#repeats.get(key);
      if (occurrence === undefined) {
        const firstCall = this.calls[first] as FoundCall;
        occurrence = canonicalCall(firstCall.name, firstCall.arguments) === key ? 1 : 0;
      }
      this.#repeats.set(key, occurrence + 1);
      if (occurrence > 0) id = callIdOfCanonical(key, occurrence);
    }
    return id;
  }

  #addInvalid(
    raw: string,
    name: string | undefined,
    code: InvalidBlock['code'],
    message: string,
    unclosed: boolean,
    start: InvalidBlock['start'],
    end: InvalidBlock['end'],
    at: InvalidBlock['start'] = start,
    agentId?: string,
  ): void {
    const occurrence = this.#seenBlocks.get(raw) ?? 0;
    this.#seenBlocks.set(raw, occurrence + 1);
    // The agent's own id, when it could be read and is not another call's: the agent finds its
    // result under the id it chose.
    let id: string;
    if (agentId !== undefined && !this.#explicitIds.has(agentId)) {
      this.#explicitIds.add(agentId);
      id = agentId;
    } else {
      id = deriveBlockId(raw, occurrence);
    }
    this.#pushInvalid({ id, name, code, message, unclosed, start, end }, at);
  }

  /** Record an invalid block and its error, placed at `at`. */
  #pushInvalid(block: InvalidBlock, at: InvalidBlock['start']): void {
    this.invalid.push(block);
    const { code, message, end, id } = block;
    this.diagnostics.push({ severity: 'error', code, message, start: at, end, callId: id });
  }

  #addResult(result: unknown): void {
    if (!isRecord(result)) return;
    const { id, name, status, metadata, error } = result;
    if (typeof id !== 'string' || typeof name !== 'string' || typeof status !== 'string') return;
    const hash = isRecord(metadata) ? metadata['arguments_hash'] : undefined;
    const code = isRecord(error) ? error['code'] : undefined;
    this.results.set(id, {
      id,
      name,
      status,
      ...(typeof hash === 'string' ? { argsHash: hash } : {}),
      ...(typeof code === 'string' ? { errorCode: code } : {}),
    });
  }

  /** Maps an offset in a block's code to the note: code lines follow the fence line, minus container prefixes. */
  #placeInBlock(fence: FenceBlock, position: number) {
    // The content's last line ending belongs to no line of its own.
    const value = fence.value.endsWith('\n') ? fence.value.slice(0, -1) : fence.value;
    const at = Math.max(0, Math.min(position, value.length));
    const breaks = /\r\n|\r|\n/g;
    let index = 0;
    let codeLineStart = 0;
    for (let m = breaks.exec(value); m !== null && m.index < at; m = breaks.exec(value)) {
      index++;
      codeLineStart = m.index + m[0].length;
    }
    const codeLine = /^[^\r\n]*/.exec(value.slice(codeLineStart))?.[0] ?? '';
    const lineStart = nthLineStart(this.text, fence.start, index + 1);
    const lineText = /^[^\r\n]*/.exec(this.text.slice(lineStart))?.[0] ?? '';
    const prefix = lineText.endsWith(codeLine) ? lineText.length - codeLine.length : 0;
    return this.place(lineStart + Math.min(prefix + at - codeLineStart, lineText.length));
  }
}

/**
 * 28 bits of a derived id (`call_` and 12 hex digits), its 6th to 12th characters read as hex: a
 * small integer, kept in {@link FirstCalls}' typed array.
 */
function idBits(id: string): number {
  let bits = 0;
  for (let i = 5; i < 12; i++) {
    const c = id.charCodeAt(i);
    bits = (bits << 4) | (c <= 57 ? c - 48 : (c | 32) - 87);
  }
  return bits;
}

/**
 * From 28-bit keys to the index of the first call with each: open addressing with linear probing
 * in one typed array, kept at most half full.
 */
class FirstCalls {
  // Pairs: key + 1 (0 for an empty slot), then the index.
  #slots = new Int32Array(2 * 256);
  #mask = 255;
  #count = 0;

  /** The index kept for `bits`, or -1 after keeping `index` for it. */
  firstOf(bits: number, index: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    for (let slot = bits & mask; ; slot = (slot + 1) & mask) {
      const key = slots[2 * slot] as number;
      if (key === bits + 1) return slots[2 * slot + 1] as number;
      if (key !== 0) continue;
      slots[2 * slot] = bits + 1;
      slots[2 * slot + 1] = index;
      if (++this.#count > mask >> 1) this.#grow();
      return -1;
    }
  }

  #grow(): void {
    const old = this.#slots;
    const mask = this.#mask * 2 + 1;
    const slots = new Int32Array(2 * (mask + 1));
    for (let i = 0; i < old.length; i += 2) {
      const key = old[i] as number;
      if (key === 0) continue;
      let slot = (key - 1) & mask;
      while (slots[2 * slot] !== 0) slot = (slot + 1) & mask;
      slots[2 * slot] = key;
      slots[2 * slot + 1] = old[i + 1] as number;
    }
    this.#slots = slots;
    this.#mask = mask;
  }
}

function nthLineStart(text: string, from: number, n: number): number {
  const re = /\r\n|\r|\n/g;
  re.lastIndex = from;
  let at = from;
  for (let i = 0; i < n; i++) {
    const m = re.exec(text);
    if (m === null) return text.length;
    at = m.index + m[0].length;
  }
  return at;
}

function parseJson(value: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(value) as unknown };
  } catch (error) {
    const raw = (error as Error).message;
    const position = /at position (\d+)/.exec(raw)?.[1];
    const reason = raw
      .replace(/ in JSON at position \d+.*$/s, '')
      .replace(/\s*\(line \d+ column \d+\)/, '')
      .replace(/^JSON\.parse: /, '');
    return {
      ok: false,
      reason,
      position: position === undefined ? value.length : Number(position),
    };
  }
}

type ReadCall =
  | { name: string; args: Record<string, unknown>; id: string | undefined }
  | { problem: string; name: string | undefined; id?: string | undefined };

function readCall(json: unknown): ReadCall {
  if (!isRecord(json)) {
    const problem = `the block must be one JSON object ${SHAPE}; write one block per call`;
    return { problem, name: undefined };
  }
  if (!('tool_call' in json)) {
    const problem =
      'tool_calls' in json
        ? `write one block per call, each with the key "tool_call" (singular): ${SHAPE}`
        : `the block mentions tool_call but has no "tool_call" key; write it as ${SHAPE}`;
    return { problem, name: undefined };
  }
  const call = json.tool_call;
  const name = isRecord(call) && typeof call.name === 'string' ? call.name : undefined;
  // The agent's id is kept on an invalid call whenever it can be read.
  const id =
    isRecord(call) && typeof call.id === 'string' && EXPLICIT_ID.test(call.id)
      ? call.id
      : undefined;
  const problem = (text: string): ReadCall => ({ problem: text, name, id });
  // Keys are listed only when there is one too many: a note of 10,000 calls made two arrays per
  // call here for nothing.
  const extra = keysOutside(json, ONLY_TOOL_CALL);
  if (extra.length > 0) {
    return problem(`remove ${quoteList(extra)}: the block must hold only "tool_call"`);
  }
  if (!isRecord(call)) {
    return problem(`"tool_call" must be an object with "name" and "parameters": ${SHAPE}`);
  }
  const unknown = keysOutside(call, CALL_KEY_SET);
  if (unknown.length > 0) {
    return problem(
      `remove ${quoteList(unknown)} from tool_call; it takes only "name", "parameters" (or "arguments") and "id"`,
    );
  }
  if (name === undefined || !TOOL_NAME.test(name)) {
    const got = call.name === undefined ? 'it is missing' : `got ${short(call.name)}`;
    return problem(
      `tool_call.name must be a snake_case tool name matching ^[a-z][a-z0-9_]*$ such as "search_web"; ${got}`,
    );
  }
  if ('parameters' in call && 'arguments' in call) {
    return problem('use either "parameters" or "arguments" in tool_call, not both');
  }
  const args = 'parameters' in call ? call.parameters : 'arguments' in call ? call.arguments : {};
  if (!isRecord(args)) {
    return problem(
      `tool_call.parameters must be an object of named arguments such as {"query": "..."}; got ${short(args)}`,
    );
  }
  if (nestsDeeperThan(args, MAX_NESTING)) {
    return problem(
      `tool_call.parameters nest more than ${MAX_NESTING} levels deep; pass deeply nested data as a string or a file instead`,
    );
  }
  if ('id' in call && id === undefined) {
    return problem(
      `tool_call.id must be a string of 1 to 100 characters from A-Z a-z 0-9 _ . : - (got ${short(call.id)}); or leave it out and vaultd derives one`,
    );
  }
  return { name, args, id };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function quoteList(keys: readonly string[]): string {
  return keys.map((k) => JSON.stringify(k)).join(', ');
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
