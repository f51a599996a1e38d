/**
 * Find the user-info of URLs in a text in time linear in it: each `://` is found with `indexOf`,
 * its scheme by walking back over scheme characters. A regular expression such as
 * `/\b([a-z][a-z0-9+.-]*:\/\/)…@/gi` tries the scheme at every word start and runs it to the end of
 * a run of scheme characters: `a.a.a.…` over 256 KiB of a tool's output held the main thread for
 * 16 s.
 * @param text the text.
 * @param userInfo a sticky pattern for what follows `://` up to and including the `@`.
 * @param replace gets the scheme with its `://`, returns what the scheme and user-info become.
 */
export function replaceUserInfo(
  text: string,
  userInfo: RegExp,
  replace: (scheme: string) => string,
): string {
  if (!userInfo.sticky) throw new Error('replaceUserInfo needs a sticky pattern');
  const pieces: string[] = [];
  let kept = 0;
  let searchFrom = 0;
  for (;;) {
    const at = text.indexOf('://', searchFrom);
    if (at === -1) break;
    searchFrom = at + 3;
    const start = schemeStart(text, at, kept);
    if (start === -1) continue;
    userInfo.lastIndex = at + 3;
    const match = userInfo.exec(text);
    if (match === null) continue;
    const end = at + 3 + match[0].length;
    pieces.push(text.slice(kept, start), replace(text.slice(start, at + 3)));
    kept = end;
    searchFrom = end;
  }
  if (kept === 0) return text;
  pieces.push(text.slice(kept));
  return pieces.join('');
}

const isSchemeChar = (code: number): boolean =>
  (code >= 97 && code <= 122) ||
  (code >= 65 && code <= 90) ||
  (code >= 48 && code <= 57) ||
  code === 43 ||
  code === 46 ||
  code === 45;
const isLetter = (code: number): boolean =>
  (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
const isWordChar = (code: number): boolean =>
  isLetter(code) || (code >= 48 && code <= 57) || code === 95;

/**
 * Where the scheme ending at `at` starts, as `\b[a-z][a-z0-9+.-]*` (case-insensitive) would
 * find it leftmost: a letter at a word boundary; -1 when there is none. Not before `floor`.
 */
function schemeStart(text: string, at: number, floor: number): number {
  let run = at;
  while (run > floor && isSchemeChar(text.charCodeAt(run - 1))) run--;
  for (let p = run; p < at; p++) {
    if (!isLetter(text.charCodeAt(p))) continue;
    if (p === 0 || !isWordChar(text.charCodeAt(p - 1))) return p;
  }
  return -1;
}
