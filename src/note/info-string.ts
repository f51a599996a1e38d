// A fence's info string as CommonMark decodes it: backslash escapes of ASCII punctuation, and
// character references. Numeric references follow HTML's rules, as CommonMark's reference
// implementation does: U+0000, surrogates and code points past U+10FFFF become U+FFFD, and
// 0x80–0x9F name the Windows-1252 characters HTML maps them to. markdown-it keeps a reference to
// a control character or a noncharacter as written instead.

/** `\` and an ASCII punctuation character, or a character reference with its name. */
const ESCAPE_OR_REFERENCE =
  /\\([!-/:-@[-`{-~])|&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z][a-zA-Z0-9]{1,31});/g;

/** What HTML makes of the numeric references &#x80; to &#x9F; (0: the code point itself). */
const C1 = [
  0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152,
  0, 0x017d, 0, 0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161,
  0x203a, 0x0153, 0, 0x017e, 0x0178,
];

function numeric(code: number): string {
  if (code === 0 || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return '\ufffd';
  if (code >= 0x80 && code <= 0x9f) code = (C1[code - 0x80] as number) || code;
  return String.fromCodePoint(code);
}

/**
 * Decode a fence's info string (as written, before trimming).
 * @param raw the info string.
 * @param named decodes a named reference (`&amp;`), or gives it back as written when HTML has no
 *   such name.
 */
export function decodeInfoString(raw: string, named: (reference: string) => string): string {
  if (!raw.includes('\\') && !raw.includes('&')) return raw;
  return raw.replace(ESCAPE_OR_REFERENCE, (match, escaped: string | undefined, name?: string) => {
    if (escaped !== undefined) return escaped;
    if (name?.charCodeAt(0) !== 0x23) return named(match);
    const hex = name.charCodeAt(1) === 0x78 || name.charCodeAt(1) === 0x58;
    return numeric(Number.parseInt(name.slice(hex ? 2 : 1), hex ? 16 : 10));
  });
}
