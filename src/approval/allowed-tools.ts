import { compileGlob } from './glob.ts';

/** The note's tool restriction as read from its front-matter. */
export interface AllowedToolsRead {
  /** The tools the note may call; `undefined` when the note sets no restriction. */
  readonly allowed: readonly string[] | undefined;
  /** Set when the value was not a list of tool names; the note may then call nothing. */
  readonly problem?: string;
}

/**
 * Read front-matter `allowed_tools`: a list of tool names or globs (`git_*`), or a single name.
 * Anything else restricts the note to no tool at all, with a problem to report: a restriction
 * the agent got wrong must never widen what the note may do.
 * @param value the front-matter value; `undefined` or `null` when the key is absent.
 */
export function readAllowedTools(value: unknown): AllowedToolsRead {
  if (value === undefined || value === null) return { allowed: undefined };
  if (typeof value === 'string') return { allowed: Object.freeze([value.trim()]) };
  if (Array.isArray(value) && value.every((item): item is string => typeof item === 'string')) {
    return { allowed: Object.freeze(value.map((item) => item.trim())) };
  }
  return {
    allowed: Object.freeze([]),
    problem: `allowed_tools must be a list of tool names, e.g. [search_web, read_file]; got ${JSON.stringify(value)}, so this note may call no tool`,
  };
}

/**
 * True when `name` is one of the allowed tools or matches one of their globs (case-sensitive).
 * @param allowed entries of `allowed_tools`.
 * @param name the tool the call names.
 */
export function matchesAllowedTools(allowed: readonly string[], name: string): boolean {
  return allowed.some((entry) => entry === name || compileGlob(entry)(name));
}
