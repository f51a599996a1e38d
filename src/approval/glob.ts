/** Options of {@link compileGlob}. */
export interface GlobOptions {
  /** Compare letters without regard to case; defaults to false. */
  readonly ignoreCase?: boolean;
}

/** A compiled glob: true when the whole value matches. */
export type GlobMatcher = (value: string) => boolean;

type Token =
  | { readonly kind: 'star' }
  | { readonly kind: 'one' }
  | { readonly kind: 'char'; readonly char: string };

/**
 * Compile a glob into a matcher: `*` matches any run of characters (newlines included), `?`
 * exactly one character (code point), and `\` makes the next character literal. Matching takes
 * time proportional to pattern length times value length at worst, whatever the pattern.
 * @param glob the pattern; a trailing lone `\` stands for itself.
 * @param options case handling; case-sensitive by default.
 */
export function compileGlob(glob: string, options: GlobOptions = {}): GlobMatcher {
  const fold = options.ignoreCase === true;
  const tokens = tokenize(fold ? glob.toLowerCase() : glob);
  return (value) => matchTokens(tokens, Array.from(fold ? value.toLowerCase() : value));
}

function tokenize(glob: string): Token[] {
  const tokens: Token[] = [];
  let escaped = false;
  for (const char of glob) {
    if (escaped) {
      tokens.push({ kind: 'char', char });
      escaped = false;
    } else if (char === '\\') {
      escaped = true;
    } else if (char === '*') {
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (char === '?') {
      tokens.push({ kind: 'one' });
    } else {
      tokens.push({ kind: 'char', char });
    }
  }
  if (escaped) tokens.push({ kind: 'char', char: '\\' });
  return tokens;
}

// Iterative wildcard matching that backtracks only to the most recent star: O(p * v).
function matchTokens(tokens: readonly Token[], value: readonly string[]): boolean {
  let t = 0;
  let v = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (v < value.length) {
    const token = tokens[t];
    if (token !== undefined && token.kind === 'star') {
      starAt = t;
      resumeAt = v;
      t += 1;
    } else if (token !== undefined && (token.kind === 'one' || token.char === value[v])) {
      t += 1;
      v += 1;
    } else if (starAt >= 0) {
      t = starAt + 1;
      resumeAt += 1;
      v = resumeAt;
    } else {
      return false;
    }
  }
  while (tokens[t]?.kind === 'star') t += 1;
  return t === tokens.length;
}
