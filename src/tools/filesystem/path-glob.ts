import { compileGlob, type GlobMatcher } from '../../approval/glob.ts';
import { ToolError } from '../../protocol/errors.ts';

/** Alternatives `{a,b}` expand to at most this many patterns. */
const MAX_ALTERNATIVES = 64;

/**
 * Compile a path glob: `*` and `?` within one name, `**` any number of folders, `{a,b}`
 * alternatives. A pattern without `/` matches file names at any depth (`*.md`); one with `/`
 * matches the path relative to the folder searched (`Notes/**\/*.md`). Matching takes time
 * proportional to pattern times path length, whatever the pattern.
 * @param pattern the glob.
 * @param ignoreCase compare letters regardless of case.
 * @returns a matcher of `/`-separated relative paths.
 */
export function compilePathGlob(
  pattern: string,
  ignoreCase: boolean,
): (relative: string) => boolean {
  const alternatives = expandBraces(pattern);
  const matchers = alternatives.map((alt) => compileOne(alt, ignoreCase));
  return (relative) => matchers.some((m) => m(relative));
}

function compileOne(pattern: string, ignoreCase: boolean): (relative: string) => boolean {
  let trimmed = pattern.replace(/^\.\//, '');
  let end = trimmed.length;
  while (end > 0 && trimmed.charCodeAt(end - 1) === 47) end--; // not /\/+$/: quadratic in a run
  trimmed = trimmed.slice(0, end);
  if (!trimmed.includes('/')) {
    const name = compileGlob(trimmed, { ignoreCase });
    return (relative) => name(relative.slice(relative.lastIndexOf('/') + 1));
  }
  const segments: (GlobMatcher | 'globstar')[] = trimmed
    .split('/')
    .filter((s) => s !== '')
    .map((s) => (s === '**' ? 'globstar' : compileGlob(s, { ignoreCase })));
  return (relative) => matchSegments(segments, relative.split('/'));
}

// Dynamic programming over (pattern segment, path segment): no exponential backtracking.
function matchSegments(
  pattern: readonly (GlobMatcher | 'globstar')[],
  path: readonly string[],
): boolean {
  let reachable = new Array<boolean>(path.length + 1).fill(false);
  reachable[0] = true;
  for (const seg of pattern) {
    const next = new Array<boolean>(path.length + 1).fill(false);
    for (let i = 0; i <= path.length; i++) {
      if (reachable[i] !== true) continue;
      if (seg === 'globstar') {
        for (let j = i; j <= path.length; j++) next[j] = true;
      } else if (i < path.length && seg(path[i] ?? '')) {
        next[i + 1] = true;
      }
    }
    reachable = next;
  }
  return reachable[path.length] === true;
}

function expandBraces(pattern: string): string[] {
  const open = pattern.indexOf('{');
  const close = open < 0 ? -1 : pattern.indexOf('}', open);
  if (open < 0 || close < 0) return [pattern];
  const head = pattern.slice(0, open);
  const tail = expandBraces(pattern.slice(close + 1));
  const out: string[] = [];
  for (const choice of pattern.slice(open + 1, close).split(',')) {
    for (const rest of tail) {
      out.push(head + choice + rest);
      if (out.length > MAX_ALTERNATIVES) {
        throw new ToolError(
          'INVALID_PARAMS',
          `the pattern ${pattern} has more than ${MAX_ALTERNATIVES} alternatives`,
        );
      }
    }
  }
  return out;
}
