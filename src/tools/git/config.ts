import type { PackRoot } from '../../protocol/pack.ts';
import type { JsonSchema } from '../../protocol/types.ts';

/** The `tools.git` section, read once per call from the validated config. */
export interface GitConfig {
  /** Folders besides the vault where repositories may be (and local remotes pushed to). */
  readonly roots: readonly PackRoot[];
  /** The git program: a path, or a name looked up in {@link GIT_PATH}. */
  readonly gitPath: string;
  /** Let the repositories' hooks run (`core.hooksPath` is `/dev/null` otherwise). */
  readonly runHooks: boolean;
  /** Repositories (paths as an agent would give them) where `git_commit` is only cautious. */
  readonly scratchRepos: readonly string[];
  /** Who commits: `tools.git.author`. */
  readonly author: { readonly name: string; readonly email: string };
  /** Whether `git_push` may force (with lease) when a call asks for it. */
  readonly allowForcePush: boolean;
  /** Sign commits with the system `gpg` (never a program named by the repository). */
  readonly signCommits: boolean;
  /** The ssh command for pushes over ssh (run by git through a shell; operator-written). */
  readonly sshCommand: string;
}

/** The `PATH` every git process gets. */
export const GIT_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The author and committer when `tools.git.author` says nothing. */
export const DEFAULT_AUTHOR = Object.freeze({ name: 'vaultd', email: 'vaultd@localhost' });

/** JSON Schema of `tools.git`. */
export const gitConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    roots: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' },
          path: { type: 'string', pattern: '^/' },
          writable: { type: 'boolean', default: true },
        },
        required: ['name', 'path'],
        additionalProperties: false,
      },
    },
    git_path: { type: 'string', minLength: 1, default: 'git' },
    run_hooks: { type: 'boolean', default: false },
    scratch_repos: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    author: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^<>\\n]+$' },
        email: { type: 'string', minLength: 3, maxLength: 200, pattern: '^[^<>\\s]+@[^<>\\s]+$' },
      },
      required: ['name', 'email'],
      additionalProperties: false,
    },
    allow_force_push: { type: 'boolean', default: false },
    sign_commits: { type: 'boolean', default: false },
    ssh_command: { type: 'string', minLength: 1, default: 'ssh -o BatchMode=yes' },
  },
  additionalProperties: false,
};

/**
 * The typed view of a validated `tools.git` section (defaults applied again, so a section that
 * skipped validation, as in tests, reads the same).
 * @param section the pack's config section.
 */
export function readGitConfig(section: Readonly<Record<string, unknown>>): GitConfig {
  const roots = Array.isArray(section['roots']) ? (section['roots'] as unknown[]) : [];
  const author = section['author'] as { name?: unknown; email?: unknown } | undefined;
  return {
    roots: roots.map((raw) => {
      const r = raw as Record<string, unknown>;
      return {
        name: String(r['name']),
        path: String(r['path']),
        writable: r['writable'] !== false,
      };
    }),
    gitPath: typeof section['git_path'] === 'string' ? section['git_path'] : 'git',
    runHooks: section['run_hooks'] === true,
    scratchRepos: Array.isArray(section['scratch_repos'])
      ? (section['scratch_repos'] as unknown[]).map(String)
      : [],
    author:
      typeof author?.name === 'string' && typeof author.email === 'string'
        ? { name: author.name, email: author.email }
        : DEFAULT_AUTHOR,
    allowForcePush: section['allow_force_push'] === true,
    signCommits: section['sign_commits'] === true,
    sshCommand:
      typeof section['ssh_command'] === 'string' ? section['ssh_command'] : 'ssh -o BatchMode=yes',
  };
}
