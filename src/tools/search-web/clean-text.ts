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

const BLOCK_TAGS = new Set([
  'br',
  'p',
  'div',
  'li',
  'ul',
  'ol',
  'tr',
  'td',
  'th',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'table',
  'section',
  'article',
  'header',
  'footer',
]);

/**
 * Turn an HTML fragment into one line of plain text: scripts and styles dropped, tags stripped
 * (block-level ones become a space), comments dropped, entities decoded, whitespace collapsed and
 * trimmed. One pass, linear in the input whatever it holds: a `<` with no `>` after it is text, an
 * unclosed comment, script or style runs to the end (as a browser reads it).
 * @param html a fragment as a provider returns it, e.g. `Foo <b>bar</b> &amp; baz`.
 */
export function cleanText(html: string): string {
  const lower = html.toLowerCase();
  // Past this index no tag can close, so every later `<` is text: no rescans.
  const lastClose = html.lastIndexOf('>');
  const out: string[] = [];
  let i = 0;
  let textStart = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt === -1 || lt > lastClose) break;
    out.push(html.slice(textStart, lt));
    if (lower.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      i = textStart = end === -1 ? html.length : end + 3;
      continue;
    }
    const name = /^<\/?([a-z][a-z0-9]*)/.exec(lower.slice(lt, lt + 34))?.[1];
    if (name === undefined) {
      out.push('<');
      i = textStart = lt + 1;
      continue;
    }
    const gt = html.indexOf('>', lt);
    if (name === 'script' || name === 'style') {
      const close = lower.indexOf(`</${name}`, gt + 1);
      const closeEnd = close === -1 ? -1 : html.indexOf('>', close);
      out.push(' ');
      i = textStart = closeEnd === -1 ? html.length : closeEnd + 1;
      continue;
    }
    if (BLOCK_TAGS.has(name)) out.push(' ');
    i = textStart = gt + 1;
  }
  out.push(html.slice(textStart));
  return decodeEntities(out.join('')).replace(/\s+/g, ' ').trim();
}
