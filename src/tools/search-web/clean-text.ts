const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  bull: '•',
  middot: '·',
  copy: '©',
  reg: '®',
  trade: '™',
  deg: '°',
  times: '×',
  euro: '€',
  pound: '£',
};

/**
 * Decode HTML character references: the common named ones and every numeric one.
 * Unknown named references and invalid code points are left as written.
 * @param text HTML text or attribute value.
 */
export function decodeEntities(text: string): string {
  return text.replace(
    /&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z][a-zA-Z0-9]{1,31});/g,
    (whole, ref: string) => {
      if (ref.startsWith('#')) {
        const hex = ref[1] === 'x' || ref[1] === 'X';
        const code = Number.parseInt(ref.slice(hex ? 2 : 1), hex ? 16 : 10);
        const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
        return valid ? String.fromCodePoint(code) : whole;
      }
      return NAMED_ENTITIES[ref] ?? NAMED_ENTITIES[ref.toLowerCase()] ?? whole;
    },
  );
}

/**
 * Turn an HTML fragment into one line of plain text: scripts and styles dropped, tags stripped
 * (block-level ones become a space), entities decoded, whitespace collapsed and trimmed.
 * @param html a fragment as a provider returns it, e.g. `Foo <b>bar</b> &amp; baz`.
 */
export function cleanText(html: string): string {
  const withoutCode = html.replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, ' ');
  const blocksSpaced = withoutCode.replace(
    /<\/?(?:br|p|div|li|ul|ol|tr|td|th|h[1-6]|table|section|article|header|footer)\b[^>]*>/gi,
    ' ',
  );
  const stripped = blocksSpaced.replace(/<!--[\s\S]*?-->/g, '').replace(/<\/?[a-zA-Z][^>]*>/g, '');
  return decodeEntities(stripped).replace(/\s+/g, ' ').trim();
}
