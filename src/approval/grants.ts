import { readFileSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../vault/atomic-write.ts';
import { VaultIoError } from '../vault/fs-errors.ts';
import { withLockFile } from '../vault/lock.ts';
import {
  compilePolicy,
  matchesRule,
  parsePolicyRule,
  type CompiledRule,
  type RuleCall,
} from './policy.ts';
import { hashSchema } from '../protocol/hash-arguments.ts';

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
  /**
   * The pack the granted tool came from (`filesystem`, `mcp`, a plugin's name…), `builtin` for a
   * tool of no pack; null for a grant stored before grants recorded it (it covers the name only).
   */
  readonly pack: string | null;
  /** Hash of the granted tool's input schema (`hashSchema`); null as for `pack`. */
  readonly schema: string | null;
}

/**
 * What a grant is bound to besides the tool's name: the pack that brought the tool and the
 * parameters it took. A grant covers a call only when both are still the same.
 */
export interface ToolIdentity {
  /** The tool's pack, `builtin` for a tool of no pack. */
  readonly pack: string;
  /** Hash of the tool's input schema. */
  readonly schema: string;
}

/** A call as grants see it: the policy's view of it, and the identity of its tool. */
export interface GrantCall extends RuleCall {
  /** The tool's identity; without it only grants that recorded none (older ones) are compared. */
  readonly identity?: ToolIdentity | undefined;
}

/** The grant whose rule matches a call, and whether it still covers the call's tool. */
export interface GrantMatch {
  readonly grant: Grant;
  /**
   * False when the grant was given for a tool of this name from another pack or with other
   * parameters: the call asks a human again.
   */
  readonly current: boolean;
}

/** Options of {@link GrantStore.add}. */
export interface AddGrantOptions {
  readonly by: string;
  readonly channel?: string;
  readonly note?: string | undefined;
  readonly request?: string | undefined;
  /** Time of the grant; defaults to now. */
  readonly now?: Date;
  /** The granted tool's pack and schema; without them the grant covers the name only. */
  readonly identity?: ToolIdentity | undefined;
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
   * The first grant whose rule matches the call (strictly, as an `allow` rule) and that still
   * covers its tool (see {@link lookup}), or undefined.
   * @param call the tool name, its normalised arguments and the tool's identity.
   */
  match(call: GrantCall): Grant | undefined {
    const found = this.lookup(call);
    return found?.current === true ? found.grant : undefined;
  }

  /**
   * The grant whose rule matches the call, preferring one that still covers the call's tool: a
   * grant given for a tool of this name from another pack, or with other parameters (an MCP
   * server's new schema, a tool a later pack brings under a removed one's name), is returned with
   * `current: false`, so the call asks again and says why. Grants stored without an identity
   * compare the name only.
   * @param call the tool name, its normalised arguments and the tool's identity.
   */
  lookup(call: GrantCall): GrantMatch | undefined {
    this.#refresh();
    let stale: Grant | undefined;
    for (const g of this.#grants) {
      if (!matchesRule(g.compiled, call)) continue;
      if (covers(g.grant, call.identity)) return { grant: g.grant, current: true };
      stale ??= g.grant;
    }
    return stale === undefined ? undefined : { grant: stale, current: false };
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
        pack: options.identity?.pack ?? null,
        schema: options.identity?.schema ?? null,
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
    const run = this.#chain.then(() => this.#locked(() => this.#change(change)));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Run `work` holding `grants.json.lock`: the daemon and `vaultd grants` are two processes, each
   * reading the file, changing it and writing it whole, and a revoke reported done was undone by a
   * grant the daemon wrote at the same moment from the file as it was before (review finding).
   */
  async #locked<T>(work: () => Promise<T>): Promise<T> {
    const lock = `${this.path}.lock`;
    await mkdir(this.#stateDir, { recursive: true }).catch((error: unknown) => {
      throw new GrantsFileError(this.path, 'could not save the grants', { cause: error });
    });
    try {
      return await withLockFile(lock, work, {
        waitMs: LOCK_WAIT_MS,
        staleMs: STALE_LOCK_MS,
        busy: () =>
          new GrantsFileError(
            this.path,
            `the grants are locked by another process (${lock}); try again, or delete the lock if no vaultd is running`,
          ),
      });
    } catch (error) {
      if (!(error instanceof VaultIoError) || error.path !== lock) throw error;
      throw new GrantsFileError(this.path, 'could not lock the grants', { cause: error });
    }
  }

  /** Read the file again, apply `change`, and write the file whole (atomically). */
  async #change<T>(change: () => T): Promise<T> {
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
      await writeFileAtomic(this.path, `${JSON.stringify(body, null, 2)}\n`);
    } catch (error) {
      this.reload();
      throw new GrantsFileError(this.path, 'could not save the grants', { cause: error });
    }
    this.#stamp = stampOf(this.path);
    return outcome;
  }
}

/** How long a write waits for another process's lock on the grants. */
const LOCK_WAIT_MS = 10_000;
/** A lock older than this is a leftover (a write takes milliseconds). */
const STALE_LOCK_MS = 30_000;

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
 * The identity a grant of a tool records: its pack (`builtin` without one) and its schema's hash.
 * @param tool the registered tool.
 */
export function toolIdentity(tool: {
  readonly pack?: string | undefined;
  readonly inputSchema: unknown;
}): ToolIdentity {
  return { pack: tool.pack ?? 'builtin', schema: hashSchema(tool) };
}

/**
 * The rule an "always allow" box offers for a call of a tool with `grantParameters`: the tool with
 * those parameters pinned to this call's values, exactly (`shell_exec(command:"npm test",
 * cwd:".")`); undefined when the tool pins none (the box offers the tool); null when a value
 * cannot be pinned (not a one-line string without backticks, which the box's line could not
 * carry): then no box is offered, since the whole tool is not what the human looked at.
 * @param tool the registered tool.
 * @param args the call's normalised arguments.
 */
export function pinnedRule(
  tool: { readonly name: string; readonly grantParameters?: readonly string[] | undefined },
  args: Readonly<Record<string, unknown>>,
): string | null | undefined {
  const names = tool.grantParameters ?? [];
  if (names.length === 0) return undefined;
  const parts: string[] = [];
  for (const name of names) {
    const value = args[name];
    if (value === undefined) continue;
    // eslint-disable-next-line no-control-regex -- control characters cannot be pinned on one line
    if (typeof value !== 'string' || /[\x00-\x1f\x7f`\u2028\u2029]/.test(value)) return null;
    parts.push(`${name}:"${value.replace(/[\\*?"]/g, (c) => `\\${c}`)}"`);
  }
  if (parts.length === 0) return null;
  const rule = `${tool.name}(${parts.join(', ')})`;
  // Offered only when it reads back as a grant that covers exactly this call.
  const compiled = compileGrant(rule);
  if (typeof compiled === 'string' || !matchesRule(compiled, { name: tool.name, arguments: args }))
    return null;
  return rule;
}

/**
 * The tool a grant's rule names: `write_file(path:Notes/*)` → `write_file`.
 * @param rule the rule as written.
 */
export function grantToolName(rule: string): string {
  const open = rule.indexOf('(');
  return (open === -1 ? rule : rule.slice(0, open)).trim();
}

/**
 * True when a grant still covers a tool: it recorded no identity (an older grant, the name only),
 * or the tool has the pack and schema it was granted with. A call that brings no identity is
 * covered only by grants that recorded none.
 */
function covers(grant: Grant, identity: ToolIdentity | undefined): boolean {
  if (grant.pack === null && grant.schema === null) return true;
  return identity !== undefined && grant.pack === identity.pack && grant.schema === identity.schema;
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
        pack: typeof entry['pack'] === 'string' ? entry['pack'] : null,
        schema: typeof entry['schema'] === 'string' ? entry['schema'] : null,
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
