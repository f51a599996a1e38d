// The front-matter agents and vaultd write is nearly always a few `key: value` lines. Reading it
// with the `yaml` library's Document API (lexer, parser, composer, then toJS) was a quarter of the
// CPU a note costs, twice per note (read, then the check of the write-back). This reader takes
// only that shape and gives up (null) on anything else, which then goes to the library:
//
//   key: value        one line per key, the key a plain word at column 0
//   # comment         whole-line comments at column 0, and blank lines
//
// where a value is empty (null), a plain word or phrase, a single- or double-quoted string on
// the line, or a flow list of such items (`[a, "b c"]`), optionally followed by ` # comment`.
// Plain values are resolved as YAML 1.2's core schema does (null, booleans, integers written
// plainly, everything else a string); numbers in any other spelling are left to the library.
// test/note/simple-yaml.test.ts checks it against the library on random documents.

/** One `key: value` line as read: where its value is in the content, for splicing. */
export interface SimplePair {
  readonly key: string;
  readonly value: unknown;
  /** Offsets of the value's text in the content; both at the end of `key:` when it is empty. */
  readonly from: number;
  readonly to: number;
}

/** A front-matter in the simple shape. */
export interface SimpleYaml {
  readonly data: Record<string, unknown>;
  readonly pairs: readonly SimplePair[];
}

const KEY = /^([A-Za-z_][\w-]*):(?=[ \t]|$)/;
// A plain scalar on its line: no indicator first, no `: ` or ` #` inside, no flow characters.
// Letters beyond ASCII (accents, Greek, Cyrillic, CJK…) as in titles; no separators, no BOM.
const PLAIN =
  /^[A-Za-z0-9_\u00c0-\u024f\u0370-\u1fff\u3040-\u9fff][\w .:/+@\u00c0-\u024f\u0370-\u1fff\u3040-\u9fff-]*$/;
const PLAIN_ITEM =
  /^[A-Za-z0-9_\u00c0-\u024f\u0370-\u1fff\u3040-\u9fff][\w ./+@\u00c0-\u024f\u0370-\u1fff\u3040-\u9fff-]*$/;
const QUOTED_CHARS = '[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ufeff\\ud800-\\udfff';
const SINGLE = new RegExp(`^'(?:${QUOTED_CHARS}']|'')*'$`);
const DOUBLE = new RegExp(`^"(?:${QUOTED_CHARS}"\\\\]|\\\\(?:["\\\\/bfnrt]|u[0-9a-fA-F]{4}))*"$`);
const SMALL_INT = /^(?:0|[1-9]\d{0,14})$/;
const DATE = /^\d{4}-\d\d-\d\d(?:T\d\d:\d\d:\d\d(?:\.\d+)?Z)?$/;
const KEYWORDS: Readonly<Record<string, unknown>> = {
  null: null,
  Null: null,
  NULL: null,
  true: true,
  True: true,
  TRUE: true,
  false: false,
  False: false,
  FALSE: false,
};
const NO_VALUE = Symbol('not simple');

/**
 * Read a front-matter's YAML when it has the simple shape, exactly as the `yaml` library would.
 * @param content the text between the fences (line endings LF or CRLF).
 * @returns the data and each pair's value position, or null when the shape is not the simple one.
 */
export function readSimpleYaml(content: string): SimpleYaml | null {
  const data: Record<string, unknown> = {};
  const pairs: SimplePair[] = [];
  let at = 0;
  while (at < content.length) {
    let end = content.indexOf('\n', at);
    if (end === -1) end = content.length;
    let line = content.slice(at, end);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.includes('\r') || line.includes('\t')) return null;
    if (line.trim() !== '' && !line.startsWith('#')) {
      const key = KEY.exec(line);
      if (key === null) return null;
      const name = key[1] as string;
      // A key the library reads as null or a boolean, a repeated key, or __proto__: the library.
      if (Object.hasOwn(data, name) || name === '__proto__' || Object.hasOwn(KEYWORDS, name)) {
        return null;
      }
      const rest = line.slice(key[0].length);
      const text = stripComment(rest);
      if (text === null) return null;
      const value = text === '' ? null : readValue(text);
      if (value === NO_VALUE) return null;
      data[name] = value;
      const lead = rest.length - rest.trimStart().length;
      const from = at + key[0].length + (text === '' ? 0 : lead);
      pairs.push({ key: name, value, from, to: from + text.length });
    }
    at = end + 1;
  }
  return { data, pairs };
}

/** The value text without a trailing ` # comment` and white space; null when it is not simple. */
function stripComment(rest: string): string | null {
  const text = rest.trim();
  if (text === '') return '';
  // A comment needs white space before its `#`.
  let cut: number | null = text.length;
  eachUnquoted(text, (c, i) => {
    if (c !== '#' || (i > 0 && text[i - 1] !== ' ')) return true;
    cut = i === 0 ? null : i;
    return false;
  });
  return cut === null ? null : text.slice(0, cut).trimEnd();
}

/**
 * Call `visit` with each character of `text` outside quotes, until it returns false. A quote opens
 * where a scalar may start (first, or after a space, `[` or `,`); `\` escapes inside `"…"`.
 */
function eachUnquoted(text: string, visit: (c: string, i: number) => boolean): void {
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote !== '') {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = '';
    } else if ((c === '"' || c === "'") && (i === 0 || ' [,'.includes(text[i - 1] as string))) {
      quote = c;
    } else if (!visit(c, i)) {
      return;
    }
  }
}

function readValue(text: string): unknown {
  if (text.startsWith('[')) return readFlowList(text);
  return readScalar(text, PLAIN);
}

function readScalar(text: string, plain: RegExp): unknown {
  const first = text[0];
  if (first === "'") return SINGLE.test(text) ? text.slice(1, -1).replaceAll("''", "'") : NO_VALUE;
  if (first === '"') return DOUBLE.test(text) ? (JSON.parse(text) as string) : NO_VALUE;
  if (!plain.test(text) || text.includes(': ') || text.endsWith(':') || text.includes(' #')) {
    return NO_VALUE;
  }
  if (Object.hasOwn(KEYWORDS, text)) return KEYWORDS[text];
  if (/^\d/.test(text)) {
    if (SMALL_INT.test(text)) return Number(text);
    if (DATE.test(text)) return text;
    // Other numbers (0x1F, 1e3, 1.50, 010) and strings that start with a digit: the library.
    return NO_VALUE;
  }
  return text;
}

function readFlowList(text: string): unknown {
  if (!text.endsWith(']')) return NO_VALUE;
  const inner = text.slice(1, -1).trim();
  if (inner === '') return [];
  const items: unknown[] = [];
  for (const part of splitItems(inner)) {
    const item = part.trim();
    if (item === '') return NO_VALUE;
    const value = readScalar(item, PLAIN_ITEM);
    if (value === NO_VALUE) return NO_VALUE;
    items.push(value);
  }
  return items;
}

/** Split a flow list's inside at the commas outside quotes. */
function splitItems(inner: string): string[] {
  const parts: string[] = [];
  let start = 0;
  eachUnquoted(inner, (c, i) => {
    if (c === ',') {
      parts.push(inner.slice(start, i));
      start = i + 1;
    }
    return true;
  });
  parts.push(inner.slice(start));
  return parts;
}
