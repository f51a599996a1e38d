import { CST, isMap, isScalar, Lexer, parseDocument, stringify, visit, YAMLParseError } from 'yaml';
import type { Document } from 'yaml';
import { detectLineEnding, makePlacer } from './places.ts';
import type { Placer } from './places.ts';
import { RecentTexts } from './recent-texts.ts';
import { readSimpleYaml, type SimpleYaml } from './simple-yaml.ts';
import type { Diagnostic, FrontMatterSpan } from './types.ts';

const OPEN = /^(---|\+\+\+)([A-Za-z][\w-]*)?[ \t]*(\r\n|\r|\n)/;
const LINE = /([^\r\n]*)(\r\n|\r|\n|$)/y;
/** Aliases a YAML front-matter may expand before it counts as an attack (billion laughs). */
const MAX_ALIAS_COUNT = 100;

/** Aliases a YAML front-matter may hold at all: the library resolves each by walking the document. */
const MAX_ALIASES = 100;
/** Collections a YAML front-matter may open on one line (`- - - x`, `[[[x]]]`). */
const MAX_NESTING_ON_A_LINE = 64;
/**
 * The most front-matter, in characters, handed to the YAML library: it reads about 1 ms a
 * kilobyte of plain block lists and 4 ms a kilobyte of lines that are each an error (tabs as
 * indentation, a quote left open), so 5 MB held the note worker 28 s and made 1.7 million
 * problems (bench/README.md, item 44). Plain `key: value` front-matter of any size is read by
 * vaultd's own reader.
 */
const MAX_YAML_CHARS = 256 * 1024;
/** Front-matter problems listed at most; the rest are counted in one more. */
const MAX_PROBLEMS = 20;

/**
 * Why the YAML library is not asked to read this front-matter, or null. Its composer is
 * quadratic in aliases (64 KB of `k: *a` lines held the main thread 1.6 s) and slow on
 * collections nested on one line (64 KB of `- - - … x` or `[[[ … ]]]` took 270–310 ms), so such
 * front-matter is refused before it is composed, from the library's own tokens (its lexer is
 * linear, and stops being asked at the first excess). Block collections nested over several
 * lines need their indentation, which bounds their depth by the note's size.
 */
function tooCostlyYaml(content: string): string | null {
  if (content.length > MAX_YAML_CHARS)
    return `it is ${Math.ceil(content.length / 1024)} KiB of YAML, over the ${MAX_YAML_CHARS / 1024} KiB vaultd reads with a YAML library (plain key: value lines have no limit)`;
  let aliases = 0;
  // Flow collections open (they go on over lines), and block items started on this line
  // (`- - - x`, `? ? x`: only one line can nest them without more indentation).
  let flow = 0;
  let onLine = 0;
  const deep = `it nests more than ${MAX_NESTING_ON_A_LINE} collections on one line`;
  for (const source of new Lexer().lex(content)) {
    switch (CST.tokenType(source)) {
      case 'alias':
        if (++aliases > MAX_ALIASES) return `it uses more than ${MAX_ALIASES} aliases`;
        break;
      case 'flow-map-start':
      case 'flow-seq-start':
        if (++flow + onLine > MAX_NESTING_ON_A_LINE) return deep;
        break;
      case 'flow-map-end':
      case 'flow-seq-end':
        if (flow > 0) flow--;
        break;
      case 'seq-item-ind':
      case 'explicit-key-ind':
        if (flow + ++onLine > MAX_NESTING_ON_A_LINE) return deep;
        break;
      case 'newline':
        onLine = 0;
        break;
      default:
    }
  }
  return null;
}

/**
 * Front-matter longer than this (characters) is read in the note worker, as a long note is: the
 * YAML library reads 8 KiB of the costliest front-matter in about 25 ms, and 60 KiB of it would
 * hold the main thread for 200 ms (bench/README.md, item 44).
 */
const INLINE_FRONT_MATTER_CHARS = 8 * 1024;

/**
 * Whether a note's front-matter is longer than {@link INLINE_FRONT_MATTER_CHARS}.
 * @param text the note.
 */
export function hasLongFrontMatter(text: string): boolean {
  const at = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  if (!text.startsWith('---', at) && !text.startsWith('+++', at)) return false;
  if (text.length - at <= INLINE_FRONT_MATTER_CHARS) return false;
  const span = splitFrontMatter(text);
  return span !== null && span.contentEnd - span.contentStart > INLINE_FRONT_MATTER_CHARS;
}

/** Front-matter as data, with the problems met while reading it. */
export interface FrontMatterData {
  readonly data: Record<string, unknown>;
  readonly diagnostics: Diagnostic[];
}

/**
 * Finds the front-matter at the very top of a note (after an optional BOM), never evaluating it:
 * `---` or `---<lang>` closed by a line `---` or `...`, or TOML's `+++` closed by `+++`.
 * @param text The note's text; CRLF and lone CR line endings are tolerated.
 * @returns The span, or null when the note has no closed front-matter.
 */
export function splitFrontMatter(text: string): FrontMatterSpan | null {
  const start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const open = OPEN.exec(text.slice(start, start + 200));
  if (open === null) return null;
  const fence = open[1] ?? '---';
  const named = open[2]?.toLowerCase();
  const lang = fence === '+++' ? 'toml' : (named ?? 'yaml');
  const closers = fence === '+++' ? ['+++'] : ['---', '...'];
  const contentStart = start + open[0].length;
  LINE.lastIndex = contentStart;
  while (LINE.lastIndex < text.length) {
    const lineStart = LINE.lastIndex;
    const line = LINE.exec(text);
    if (line === null) break;
    if (closers.includes((line[1] ?? '').trimEnd())) {
      return { lang, start, end: LINE.lastIndex, contentStart, contentEnd: lineStart };
    }
    if (line[0].length === 0) break;
  }
  return null;
}

/**
 * Reads a note's front-matter as plain data. YAML only: other languages are reported, never run;
 * YAML errors, warnings and a front-matter that is not a mapping are diagnostics, never thrown.
 * @param text The note's text.
 */
export function readFrontMatter(text: string): FrontMatterData {
  return readFrontMatterSpan(text, splitFrontMatter(text), makePlacer(text));
}

/**
 * Like {@link readFrontMatter} for a span already split, placing diagnostics with `place`.
 * @param text The note's text.
 * @param span The front-matter span of `text`, or null.
 * @param place Placer of `text`.
 */
export function readFrontMatterSpan(
  text: string,
  span: FrontMatterSpan | null,
  place: Placer,
): FrontMatterData {
  if (span === null) return { data: {}, diagnostics: [] };
  const whole = (severity: Diagnostic['severity'], code: string, message: string): Diagnostic => ({
    severity,
    code,
    message,
    start: place(span.start),
    end: place(span.end),
  });
  if (span.lang !== 'yaml') {
    const fence = span.lang === 'toml' ? '+++' : `---${span.lang}`;
    const message = `front-matter in ${fence} is never evaluated; use YAML (a --- fence)`;
    return { data: {}, diagnostics: [whole('error', 'UNSUPPORTED_FRONT_MATTER', message)] };
  }
  const written = text.slice(span.contentStart, span.contentEnd);
  // Lone-CR line endings (the YAML library does not take a lone CR for one): read with LF, which
  // keeps every offset.
  const content =
    written.includes('\r') && !written.includes('\n') ? written.replaceAll('\r', '\n') : written;
  const simple = readSimpleYaml(content);
  if (simple !== null) return { data: simple.data, diagnostics: [] };
  const costly = tooCostlyYaml(content);
  if (costly !== null) {
    const message = `front-matter is not read: ${costly}, which is refused as a resource attack; write plain key: value lines`;
    return { data: {}, diagnostics: [whole('warning', 'invalid-front-matter', message)] };
  }
  const doc = parseFrontMatterYaml(content);
  const at = (pos: readonly [number, number] | undefined, severity: Diagnostic['severity']) => {
    const from = span.contentStart + (pos?.[0] ?? 0);
    const to = span.contentStart + (pos?.[1] ?? 0);
    return { severity, start: place(from), end: place(Math.max(from, to)) };
  };
  const diagnostics: Diagnostic[] = [];
  // The first problems of each kind, and a count of the rest: a line that is an error repeated
  // over 64 KB made 21,000 of them, each placed and carried with the note's parse.
  for (const e of doc.errors.slice(0, MAX_PROBLEMS)) {
    const message = `front-matter is not valid YAML: ${firstLine(e.message)}; fix it so vaultd can read and update it`;
    diagnostics.push({ ...at(e.pos, 'warning'), code: 'invalid-front-matter', message });
  }
  for (const w of doc.warnings.slice(0, MAX_PROBLEMS)) {
    const message = `front-matter YAML: ${firstLine(w.message)}`;
    diagnostics.push({ ...at(w.pos, 'warning'), code: 'front-matter-warning', message });
  }
  const more =
    Math.max(0, doc.errors.length - MAX_PROBLEMS) + Math.max(0, doc.warnings.length - MAX_PROBLEMS);
  if (more > 0) {
    const message = `front-matter has ${more} more YAML problems like these`;
    diagnostics.push(whole('warning', 'front-matter-warning', message));
  }
  if (doc.errors.length > 0) return { data: {}, diagnostics };
  if (doc.contents === null) return { data: {}, diagnostics };
  let value: unknown;
  try {
    value = dataOf(doc);
  } catch (error) {
    const message = `front-matter cannot be read: ${firstLine(String((error as Error).message))}; remove the aliases`;
    diagnostics.push(whole('warning', 'invalid-front-matter', message));
    return { data: {}, diagnostics };
  }
  if (!isPlainRecord(value)) {
    const message = 'front-matter must be a mapping of keys to values (key: value lines)';
    diagnostics.push(whole('warning', 'front-matter-not-mapping', message));
    return { data: {}, diagnostics };
  }
  return { data: value, diagnostics };
}

/**
 * Sets the given top-level keys of a note's YAML front-matter and leaves every other byte alone.
 * A key whose value is a one-line scalar has just that value replaced; a missing key is appended as
 * a new line before the closing fence. Only when that is impossible (a block or multi-line value,
 * a flow mapping) is the YAML re-stringified with the `yaml` Document API, which keeps comments
 * and key order but may re-space flow collections and comments. A note without front-matter gets
 * one at the top (after any BOM). Non-YAML, broken or non-mapping front-matter is never touched:
 * the text is returned unchanged (the reader reports why). Keys set to `undefined` are skipped.
 * @param text The note's text.
 * @param updates Top-level keys and their new values (JSON-like data).
 */
export function updateFrontMatter(text: string, updates: Record<string, unknown>): string {
  const entries = Object.entries(updates).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return text;
  const span = splitFrontMatter(text);
  if (span === null) {
    const bom = text.charCodeAt(0) === 0xfeff ? '\uFEFF' : '';
    // A lone-CR note gets CR too: LF front-matter made what vaultd added later take LF as well.
    const eol = detectLineEnding(text);
    const lines = entries.map(([k, v]) => formatPair(k, v) + eol).join('');
    return `${bom}---${eol}${lines}---${eol}${text.slice(bom.length)}`;
  }
  if (span.lang !== 'yaml') return text;
  const content = text.slice(span.contentStart, span.contentEnd);
  const updated = updateYaml(content, entries, detectEol(text, span.start));
  if (updated === null) return text;
  return text.slice(0, span.contentStart) + updated + text.slice(span.contentEnd);
}

function updateYaml(content: string, entries: [string, unknown][], eol: string): string | null {
  // Lone-CR line endings: the YAML library does not take a lone CR for one (it read `title: x\r`
  // as one value ending in CR): such front-matter is edited with LF and given its CR back, and
  // left as it is when it mixes in LF.
  if (/\r(?!\n)/.test(content)) {
    if (content.includes('\n')) return null;
    const updated = updateYaml(content.replaceAll('\r', '\n'), entries, '\n');
    return updated === null ? null : updated.replaceAll('\n', '\r');
  }
  const simple = readSimpleYaml(content);
  if (simple !== null) {
    const spliced = spliceSimple(content, simple, entries, eol);
    if (spliced !== null) return spliced;
  }
  // Front-matter the reader refused is left as it is (its warning says why).
  if (simple === null && tooCostlyYaml(content) !== null) return null;
  const doc = parseFrontMatterYaml(content);
  if (doc.errors.length > 0) return null;
  let before: unknown;
  try {
    before = doc.contents === null ? {} : dataOf(doc);
  } catch {
    return null;
  }
  if (!isPlainRecord(before)) return null;
  let expected: string;
  try {
    expected = JSON.stringify({ ...before, ...Object.fromEntries(entries) });
  } catch {
    // A self-referencing alias (`a: &x [*x]`) has no JSON form: leave such front-matter alone.
    return null;
  }
  const spliced = spliceYaml(doc, content, entries, eol);
  if (spliced !== null && yamlMatches(spliced, expected)) return spliced;
  let restrung: string;
  try {
    const editable = parseEditable(content);
    for (const [k, v] of entries) editable.set(k, editable.createNode(v));
    restrung = editable.toString({ lineWidth: 0 }).replace(/\n/g, eol);
  } catch {
    // The library cannot write it back (a replaced `status: &s new` that another key aliases:
    // "Unresolved alias"): the front-matter is left as it is, the note's results still written.
    return null;
  }
  return yamlMatches(restrung, expected) ? restrung : null;
}

/**
 * Set keys of a simple front-matter by replacing their values' text (or appending a line). The
 * result must read back, with the same reader (which reads as the library does), as the intended
 * data; otherwise (a value or key the simple shape cannot hold) null, and the library does it.
 */
function spliceSimple(
  content: string,
  simple: SimpleYaml,
  entries: [string, unknown][],
  eol: string,
): string | null {
  if (content !== '' && !content.endsWith('\n')) return null;
  const edits: { from: number; to: number; text: string }[] = [];
  let appended = '';
  for (const [key, value] of entries) {
    const text = formatValue(value);
    const pair = simple.pairs.find((p) => p.key === key);
    if (pair === undefined) appended += `${key}: ${text}${eol}`;
    else
      edits.push({ from: pair.from, to: pair.to, text: pair.from === pair.to ? ` ${text}` : text });
  }
  let out = content + appended;
  for (const e of edits.sort((a, b) => b.from - a.from)) {
    out = out.slice(0, e.from) + e.text + out.slice(e.to);
  }
  const read = readSimpleYaml(out);
  const expected = JSON.stringify({ ...simple.data, ...Object.fromEntries(entries) });
  return read !== null && JSON.stringify(read.data) === expected ? out : null;
}

function spliceYaml(
  doc: Document.Parsed,
  content: string,
  entries: [string, unknown][],
  eol: string,
): string | null {
  const map = doc.contents;
  if (map !== null && (!isMap(map) || map.flow)) return null;
  const edits: { from: number; to: number; text: string }[] = [];
  let appended = '';
  for (const [key, value] of entries) {
    const pair = map?.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
    if (pair === undefined) {
      appended += formatPair(key, value) + eol;
      continue;
    }
    const old = pair.value;
    if (!isScalar(old) || old.range == null || old.anchor !== undefined || old.tag !== undefined) {
      return null;
    }
    if (old.type !== 'PLAIN' && old.type !== 'QUOTE_SINGLE' && old.type !== 'QUOTE_DOUBLE') {
      return null;
    }
    const [from, to] = old.range;
    if (/[\r\n]/.test(content.slice(from, to))) return null;
    const gap = content[from - 1] === ':' ? ' ' : '';
    edits.push({ from, to, text: gap + formatValue(value) });
  }
  let out = content + appended;
  for (const e of edits.sort((a, b) => b.from - a.from)) {
    out = out.slice(0, e.from) + e.text + out.slice(e.to);
  }
  return out;
}

function yamlMatches(content: string, expected: string): boolean {
  const doc = parseFrontMatterYaml(content);
  if (doc.errors.length > 0) return false;
  try {
    return JSON.stringify(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT })) === expected;
  } catch {
    return false;
  }
}

function parseFrontMatterYaml(content: string): Document.Parsed {
  let doc = recentDocuments.get(content);
  if (doc === undefined) {
    doc = parseEditable(content);
    recentDocuments.set(content, doc);
  }
  return doc;
}

// A note's front-matter is read when its calls are found and again, unchanged, when the results
// are written back: recent parses are kept (read-only; an edit parses its own copy).
const recentDocuments = new RecentTexts<Document.Parsed>(128, 1024 * 1024);

// The data of a cached document, read once: the note's reader and its write-back both want it.
// Never modified by either (the write-back serialises it; the reader's callers only read).
const dataOfDocument = new WeakMap<Document.Parsed, unknown>();

function dataOf(doc: Document.Parsed): unknown {
  if (dataOfDocument.has(doc)) return dataOfDocument.get(doc);
  const data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown;
  dataOfDocument.set(doc, data);
  return data;
}

function parseEditable(content: string): Document.Parsed {
  // Keys are checked for uniqueness here, once each, rather than by the library, which compares
  // every key of a mapping with every key before it: 18,000 keys took 1.3 s.
  const doc = parseDocument(content, { prettyErrors: false, uniqueKeys: false });
  addDuplicateKeyErrors(doc);
  return doc;
}

/**
 * Add the library's own error for each key that repeats an earlier key of the same mapping (as
 * its `uniqueKeys` check finds them: scalar keys of equal value), found with one set a mapping.
 * @param doc a parsed document.
 */
function addDuplicateKeyErrors(doc: Document.Parsed): void {
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        const key = pair.key;
        // NaN is no key's equal in the library's comparison, as a Set would have it.
        if (!isScalar(key) || Number.isNaN(key.value)) continue;
        if (seen.has(key.value)) {
          const range = key.range ?? [0, 0];
          doc.errors.push(
            new YAMLParseError([range[0], range[1]], 'DUPLICATE_KEY', 'Map keys must be unique'),
          );
        } else {
          seen.add(key.value);
        }
      }
    },
  });
}

function formatPair(key: string, value: unknown): string {
  return `${formatScalar(key)}: ${formatValue(value)}`;
}

function formatValue(value: unknown): string {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) {
    return formatScalar(value);
  }
  return JSON.stringify(value) ?? 'null';
}

// Values vaultd writes itself (`done`, `in_progress`, a timestamp, a count) are written as the
// `yaml` library writes them without asking it: stringify was a third of a write-back. The
// result is still checked by parsing it back (yamlMatches).
const PLAIN_WORD = /^[A-Za-z_][\w./-]*$/;
const NOT_PLAIN_WORD = /^(?:true|false|null)$/i;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z$/;

function formatScalar(value: unknown): string {
  if (typeof value === 'string') {
    if ((PLAIN_WORD.test(value) && !NOT_PLAIN_WORD.test(value)) || ISO_TIME.test(value))
      return value;
  } else if (typeof value === 'boolean' || value === null) {
    return String(value);
  } else if (typeof value === 'number' && Number.isSafeInteger(value) && !Object.is(value, -0)) {
    return String(value);
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
  const text = stringify(value, { lineWidth: 0 }).replace(/\n$/, '');
  return /[\r\n]/.test(text) ? JSON.stringify(value) : text;
}

function detectEol(text: string, from: number): string {
  const lf = text.indexOf('\n', from);
  return lf > 0 && text.charCodeAt(lf - 1) === 13 ? '\r\n' : '\n';
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Map)
  );
}
