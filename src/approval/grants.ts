import { readFileSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../vault/atomic-write.ts';
import {
  compilePolicy,
  matchesRule,
  parsePolicyRule,
  type CompiledRule,
  type RuleCall,
} from './policy.ts';

/** One always-allow grant, as stored in `grants.json` and listed by the CLI. */
export interface Grant {
  /** A bare tool name (the whole tool) or a scoped rule, e.g. `write_file(path:Notes/*)`. */
  readonly rule: string;
  /** The tool the rule names. */
  readonly tool: string;
  /** ISO time of the decision. */
  readonly granted_at: string;
  /** Who granted it: a user name, or `human` for a box ticked in the vault. */
  readonly by: string;
  /** How: `tick` (a box in the vault), `cli` or `http`. */
  readonly channel: string;
  /** The vault-relative note the decision was made on, when there was one. */
  readonly note: string | null;
  /** The approval request whose decision made the grant, when there was one. */
  readonly request: string | null;
}

/** Options of {@link GrantStore.add}. */
export interface AddGrantOptions {
  readonly by: string;
  readonly channel?: string;
  readonly note?: string | undefined;
  readonly request?: string | undefined;
  /** Time of the grant; defaults to now. */
  readonly now?: Date;
}

/** The file name of the grants inside the state directory. */
export const GRANTS_FILE = 'grants.json';

const TOOL_NAME = /^[a-z][a-z0-9_]*$/;

/** The error for a `grants.json` that cannot be read as grants; `path` names the file. */
export class GrantsFileError extends Error {
  readonly path: string;

  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super(`${path}: ${problem}`, options);
    this.name = 'GrantsFileError';
    this.path = path;
  }
}

interface Loaded {
  readonly grant: Grant;
  readonly compiled: CompiledRule;
}

/**
 * Always-allow grants persisted at `<stateDir>/grants.json`. A grant is a rule like a policy
 * `allow` rule (a bare tool name means the whole tool) and never overrides a `deny`. Reads check
 * the file's identity first and reload it when another process (`vaultd grants revoke`) changed
 * it; writes are asynchronous and atomic (temp file, fsync, rename), one at a time. A file that
 * turns unreadable counts as no grants (calls ask again), reported through `problem`; writes then
 * refuse rather than overwrite it.
 */
export class GrantStore {
  /** Absolute path of `grants.json`. */
  readonly path: string;
  readonly #stateDir: string;
  #grants: Loaded[] = [];
  #stamp = '';
  #problem: string | null = null;
  #chain: Promise<unknown> = Promise.resolve();

  private constructor(stateDir: string) {
    this.#stateDir = stateDir;
    this.path = join(stateDir, GRANTS_FILE);
  }

  /**
   * Open the grants of a state directory; a missing file means no grants.
   * @param stateDir the daemon's state directory (`<vault>/.vaultd`); created on the first write.
   * @throws GrantsFileError when the file exists but is not a grants file.
   */
  static open(stateDir: string): GrantStore {
    const store = new GrantStore(stateDir);
    store.reload();
    if (store.#problem !== null) throw new GrantsFileError(store.path, store.#problem);
    return store;
  }

  /** Why the file could not be read at the last reload, or null when it was fine. */
  get problem(): string | null {
    return this.#problem;
  }

  /**
   * The first grant whose rule matches the call (strictly, as an `allow` rule), or undefined.
   * @param call the tool name and its normalised arguments.
   */
  match(call: RuleCall): Grant | undefined {
    this.#refresh();
    return this.#grants.find((g) => matchesRule(g.compiled, call))?.grant;
  }

  /**
   * True when some grant covers the whole of `tool` (a bare tool name).
   * @param tool the tool name.
   */
  has(tool: string): boolean {
    this.#refresh();
    return this.#grants.some((g) => g.grant.rule === tool);
  }

  /** Every grant, sorted by rule, after reloading the file if it changed. */
  list(): Grant[] {
    this.#refresh();
    return this.#grants
      .map((g) => g.grant)
      .sort((a, b) => (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0));
  }

  /**
   * Record an always-allow grant (replacing an earlier one with the same rule) and save it.
   * @param rule a tool name, or a scoped rule of one tool (`tool(param:glob, …)`; no tool globs).
   * @param options who granted it, through which channel, from which note and request.
   * @throws TypeError for a malformed rule; GrantsFileError when the file cannot be saved.
   */
  add(rule: string, options: AddGrantOptions): Promise<Grant> {
    const compiled = compileGrant(rule);
    if (typeof compiled === 'string')
      return Promise.reject(new TypeError(`cannot grant ${JSON.stringify(rule)}: ${compiled}`));
    return this.#write(() => {
      const grant: Grant = Object.freeze({
        rule: compiled.source,
        tool: grantToolName(compiled.source),
        granted_at: (options.now ?? new Date()).toISOString(),
        by: options.by,
        channel: options.channel ?? 'tick',
        note: options.note ?? null,
        request: options.request ?? null,
      });
      this.#grants = [
        ...this.#grants.filter((g) => g.grant.rule !== grant.rule),
        { grant, compiled },
      ];
      return grant;
    });
  }

  /**
   * Remove the grants of a rule as written, or every grant of a tool when given a bare tool name;
   * resolves to how many were removed.
   * @param ruleOrTool the rule or the tool name.
   */
  revoke(ruleOrTool: string): Promise<number> {
    return this.#write(() => {
      const before = this.#grants.length;
      this.#grants = this.#grants.filter(
        (g) => g.grant.rule !== ruleOrTool && g.grant.tool !== ruleOrTool,
      );
      return before - this.#grants.length;
    });
  }

  /** Read the file again now, whether or not it looks changed. */
  reload(): void {
    this.#stamp = stampOf(this.path);
    const text = readText(this.path);
    if (text === null) {
      this.#grants = [];
      this.#problem = null;
      return;
    }
    const parsed = parseGrants(text);
    if (typeof parsed === 'string') {
      this.#grants = [];
      this.#problem = parsed;
    } else {
      this.#grants = parsed;
      this.#problem = null;
    }
  }

  #refresh(): void {
    if (stampOf(this.path) !== this.#stamp) this.reload();
  }

  #write<T>(change: () => T): Promise<T> {
    const run = this.#chain.then(async () => {
      this.reload();
      if (this.#problem !== null) {
        throw new GrantsFileError(
          this.path,
          `${this.#problem}; fix or delete the file, then try again`,
        );
      }
      const outcome = change();
      const body = { version: 2, grants: this.#grants.map((g) => g.grant) };
      try {
        await mkdir(this.#stateDir, { recursive: true });
        await writeFileAtomic(this.path, `${JSON.stringify(body, null, 2)}\n`);
      } catch (error) {
        this.reload();
        throw new GrantsFileError(this.path, 'could not save the grants', { cause: error });
      }
      this.#stamp = stampOf(this.path);
      return outcome;
    });
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

/**
 * Check a grant rule: one tool (no globs in its name), optionally with parameter globs.
 * @param rule as written.
 * @returns the rule compiled as an `allow` rule, or the problem.
 */
export function compileGrant(rule: string): CompiledRule | string {
  const parsed = parsePolicyRule(rule);
  if (typeof parsed === 'string') return parsed;
  if (!TOOL_NAME.test(parsed.tool)) return 'a grant names one tool, without * or ?';
  const compiled = compilePolicy({ allow: [rule.trim()] }).allow[0];
  return compiled ?? 'the rule is empty';
}

/**
 * The tool a grant's rule names: `write_file(path:Notes/*)` → `write_file`.
 * @param rule the rule as written.
 */
export function grantToolName(rule: string): string {
  const open = rule.indexOf('(');
  return (open === -1 ? rule : rule.slice(0, open)).trim();
}

function stampOf(path: string): string {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch (error) {
    if (isMissing(error)) return 'missing';
    throw error;
  }
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

function parseGrants(text: string): Loaded[] | string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return `not valid JSON (${(error as Error).message})`;
  }
  const list = isRecord(data) ? data['grants'] : undefined;
  if (!Array.isArray(list)) return 'expected {"version": 2, "grants": [...]}';
  const grants: Loaded[] = [];
  for (const [index, entry] of list.entries()) {
    if (!isRecord(entry)) return `grants[${index}] is not an object`;
    // Version 1 stored a bare tool name under "tool".
    const rule = typeof entry['rule'] === 'string' ? entry['rule'] : entry['tool'];
    if (typeof rule !== 'string') return `grants[${index}] has no "rule"`;
    const compiled = compileGrant(rule);
    if (typeof compiled === 'string')
      return `grants[${index}] ${JSON.stringify(rule)}: ${compiled}`;
    const text = (key: string, fallback: string): string =>
      typeof entry[key] === 'string' ? (entry[key] as string) : fallback;
    grants.push({
      compiled,
      grant: Object.freeze({
        rule: compiled.source,
        tool: grantToolName(compiled.source),
        granted_at: text('granted_at', ''),
        by: text('by', 'unknown'),
        channel: text('channel', 'tick'),
        note: typeof entry['note'] === 'string' ? entry['note'] : null,
        request: typeof entry['request'] === 'string' ? entry['request'] : null,
      }),
    });
  }
  return grants;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
