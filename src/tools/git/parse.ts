/** One changed file as git_status reports it. */
export interface StatusFile {
  readonly path: string;
  /** `modified`, `added`, `deleted`, `renamed`, `copied`, `type_changed`, `untracked`, `conflicted`. */
  readonly status: string;
  /** The index (staged) and working-tree letters of `git status --porcelain`. */
  readonly index: string;
  readonly worktree: string;
  readonly staged: boolean;
  readonly orig_path?: string;
}

const WORDS: Record<string, string> = {
  M: 'modified',
  A: 'added',
  D: 'deleted',
  R: 'renamed',
  C: 'copied',
  T: 'type_changed',
};

/**
 * Read `git status --porcelain=v2 --branch -z`.
 * @param text its output.
 */
export function parseStatus(text: string): {
  branch: string | null;
  commit: string | null;
  upstream: string | null;
  ahead: number;
  behind: number;
  files: StatusFile[];
} {
  const out = {
    branch: null as string | null,
    commit: null as string | null,
    upstream: null as string | null,
    ahead: 0,
    behind: 0,
    files: [] as StatusFile[],
  };
  const entries = text.split('\0');
  for (let i = 0; i < entries.length; i += 1) {
    const entry = entries[i] ?? '';
    if (entry.startsWith('# ')) {
      const [, key = '', ...rest] = entry.split(' ');
      const value = rest.join(' ');
      if (key === 'branch.oid') out.commit = value === '(initial)' ? null : value;
      else if (key === 'branch.head') out.branch = value === '(detached)' ? null : value;
      else if (key === 'branch.upstream') out.upstream = value;
      else if (key === 'branch.ab') {
        const m = /^\+(\d+) -(\d+)$/.exec(value);
        out.ahead = Number(m?.[1] ?? 0);
        out.behind = Number(m?.[2] ?? 0);
      }
    } else if (entry.startsWith('? ')) {
      out.files.push({
        path: entry.slice(2),
        status: 'untracked',
        index: '?',
        worktree: '?',
        staged: false,
      });
    } else if (entry.startsWith('1 ') || entry.startsWith('2 ') || entry.startsWith('u ')) {
      const kind = entry[0];
      const fields = kind === '1' ? 8 : kind === '2' ? 9 : 10;
      const parts = entry.split(' ');
      const xy = parts[1] ?? '..';
      const path = parts.slice(fields).join(' ');
      const index = xy[0] ?? '.';
      const worktree = xy[1] ?? '.';
      let orig: string | undefined;
      if (kind === '2') {
        i += 1;
        orig = entries[i];
      }
      const letter = index !== '.' ? index : worktree;
      out.files.push({
        path,
        status: kind === 'u' ? 'conflicted' : (WORDS[letter] ?? 'modified'),
        index,
        worktree,
        staged: kind !== 'u' && index !== '.',
        ...(orig === undefined ? {} : { orig_path: orig }),
      });
    }
  }
  return out;
}

/** One commit as git_log reports it. */
export interface LogCommit {
  readonly hash: string;
  readonly author: string;
  readonly email: string;
  readonly date: string;
  readonly subject: string;
}

/** The `--format` whose output {@link parseLog} reads (with `-z`). */
export const LOG_FORMAT = '--format=%H%n%an%n%ae%n%aI%n%s';

/**
 * Read `git log -z` with {@link LOG_FORMAT}.
 * @param text its output.
 */
export function parseLog(text: string): LogCommit[] {
  return text
    .split('\0')
    .filter((entry) => entry.trim() !== '')
    .map((entry) => {
      const [hash = '', author = '', email = '', date = '', subject = ''] = entry
        .replace(/^\n/, '')
        .split('\n');
      return { hash, author, email, date, subject };
    });
}

/**
 * Read `--numstat -z` output (renames as `old\0new`).
 * @param text its output.
 */
export function parseNumstat(
  text: string,
): { path: string; added: number | null; deleted: number | null; orig_path?: string }[] {
  const out: { path: string; added: number | null; deleted: number | null; orig_path?: string }[] =
    [];
  const parts = text.split('\0');
  for (let i = 0; i < parts.length; i += 1) {
    const part = (parts[i] ?? '').replace(/^\n/, '');
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(part);
    if (m === null) continue;
    const added = m[1] === '-' ? null : Number(m[1]);
    const deleted = m[2] === '-' ? null : Number(m[2]);
    if (m[3] === '') {
      const from = parts[i + 1] ?? '';
      const to = parts[i + 2] ?? '';
      i += 2;
      out.push({ path: to, added, deleted, orig_path: from });
    } else {
      out.push({ path: m[3] ?? '', added, deleted });
    }
  }
  return out;
}
