import { canonicalJson } from './canonical-json.ts';
import { compileGlob, type GlobMatcher } from './glob.ts';

/** The three rule lists of config `policy`, as written. */
export interface PolicyRules {
  readonly allow?: readonly string[] | undefined;
  readonly ask?: readonly string[] | undefined;
  readonly deny?: readonly string[] | undefined;
}

/** Which list a rule came from. */
export type PolicyList = 'allow' | 'ask' | 'deny';

/** One parameter condition of a rule: `param:glob`. */
export interface ParamCondition {
  readonly param: string;
  readonly glob: string;
  readonly match: GlobMatcher;
}

/** A rule checked and compiled once. */
export interface CompiledRule {
  /** The rule exactly as written in config. */
  readonly source: string;
  readonly list: PolicyList;
  readonly tool: GlobMatcher;
  readonly params: readonly ParamCondition[];
}

/** The policy compiled once at config load; evaluate it with {@link evaluatePolicy}. */
export interface CompiledPolicy {
  readonly allow: readonly CompiledRule[];
  readonly ask: readonly CompiledRule[];
  readonly deny: readonly CompiledRule[];
}

/** What the policy says about a call, and the rule that said it. */
export interface PolicyVerdict {
  readonly verdict: 'deny' | 'ask' | 'allow' | 'none';
  /** The matching rule as written; absent when the verdict is `none`. */
  readonly rule?: string;
}

/** The error thrown for a malformed rule; the message quotes the rule and names its place. */
export class PolicyRuleError extends Error {
  readonly list: PolicyList;
  readonly index: number;
  readonly rule: unknown;

  constructor(list: PolicyList, index: number, rule: unknown, problem: string) {
    super(`policy.${list}[${index}] ${JSON.stringify(rule)}: ${problem}. ${EXAMPLE}`);
    this.name = 'PolicyRuleError';
    this.list = list;
    this.index = index;
    this.rule = rule;
  }
}

const EXAMPLE =
  'A rule is a tool name or glob, optionally with parameter globs, e.g. "search_web", "git_*" or "send_notification(recipient:*@example.com, method:email)"';
const TOOL_GLOB = /^[a-z*?][a-z0-9_*?]*$/;
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LISTS: readonly PolicyList[] = ['deny', 'ask', 'allow'];

/**
 * Check and compile the policy rules of the config; throws {@link PolicyRuleError} quoting the
 * first malformed rule. Tool globs are case-sensitive. Parameter globs of `deny` and `ask` rules
 * ignore case (a deny is not dodged by writing `BOB@EVIL.COM`); those of `allow` rules respect it
 * (an allow never reaches further than written).
 * @param rules the `allow`, `ask` and `deny` lists; a missing list is empty.
 */
export function compilePolicy(rules: PolicyRules): CompiledPolicy {
  const compiled = {
    allow: [] as CompiledRule[],
    ask: [] as CompiledRule[],
    deny: [] as CompiledRule[],
  };
  for (const list of LISTS) {
    const entries: unknown = rules[list] ?? [];
    if (!Array.isArray(entries)) {
      throw new TypeError(`policy.${list} must be a list of rules, got ${JSON.stringify(entries)}`);
    }
    entries.forEach((rule: unknown, index) => {
      if (typeof rule !== 'string')
        throw new PolicyRuleError(list, index, rule, 'a rule must be a string');
      const parsed = parsePolicyRule(rule);
      if (typeof parsed === 'string') throw new PolicyRuleError(list, index, rule, parsed);
      const ignoreCase = list !== 'allow';
      compiled[list].push(
        Object.freeze({
          source: rule,
          list,
          tool: compileGlob(parsed.tool),
          params: Object.freeze(
            parsed.params.map(({ param, glob }) =>
              Object.freeze({ param, glob, match: compileGlob(glob, { ignoreCase }) }),
            ),
          ),
        }),
      );
    });
  }
  return Object.freeze({
    allow: Object.freeze(compiled.allow),
    ask: Object.freeze(compiled.ask),
    deny: Object.freeze(compiled.deny),
  });
}

/** A call as rules see it. */
export interface RuleCall {
  readonly name: string;
  /** The normalised arguments; path parameters hold their canonical path. */
  readonly arguments: Readonly<Record<string, unknown>>;
  /**
   * Path parameters as the agent spelled them, where that differs from their canonical path: a
   * `deny` or `ask` condition matches them too, an `allow` condition (and a grant) never does.
   * For a list of paths relative to a repository (git's `paths`), each element's vault path.
   */
  readonly spelledPaths?: Readonly<Record<string, string | readonly string[]>> | undefined;
}

/**
 * Say what the policy decides for a call: the first matching `deny` rule, else the first `ask`
 * rule, else the first `allow` rule, else `none`. A rule matches when its tool glob matches the
 * name and every parameter glob matches that parameter's value (strings as they are, numbers and
 * booleans as text, objects as canonical JSON, lists element by element: see {@link matchesRule});
 * a missing or null parameter never matches. Path parameters are matched on their canonical path
 * (vault-relative, no `.` or `..`, links resolved); `deny` and `ask` rules also on their spelling.
 * @param policy from {@link compilePolicy}.
 * @param call the tool name and its arguments.
 */
export function evaluatePolicy(policy: CompiledPolicy, call: RuleCall): PolicyVerdict {
  for (const list of LISTS) {
    const rule = policy[list].find((candidate) => matchesRule(candidate, call));
    if (rule !== undefined) return { verdict: list, rule: rule.source };
  }
  return { verdict: 'none' };
}

/**
 * Whether one rule matches a call. The rule's list decides how strictly: a `deny` or `ask`
 * condition matches when any element of a list parameter matches, as written or in its canonical
 * spelling (NFKC, invisible characters removed, trimmed; case was folded at compile time), so a
 * deny is not dodged by spelling; an `allow` condition matches only when every element of a list
 * parameter matches as written and none holds a control character, so an allow never reaches
 * further than written. A path parameter is matched on its canonical path; a `deny` or `ask`
 * condition also on the agent's spelling of it (`spelledPaths`), an `allow` condition never.
 * @param rule a compiled rule.
 * @param call the tool name, its normalised arguments and the spelling of its path parameters.
 */
export function matchesRule(rule: CompiledRule, call: RuleCall): boolean {
  if (!rule.tool(call.name)) return false;
  const strict = rule.list === 'allow';
  return rule.params.every(({ param, match }) => {
    if (!Object.hasOwn(call.arguments, param)) return false;
    const value = call.arguments[param];
    const items = Array.isArray(value) ? value : [value];
    if (items.length === 0) return false;
    const texts = items.map(stringifyParam);
    if (strict) return texts.every((text) => text !== null && !CONTROL.test(text) && match(text));
    const spelled = call.spelledPaths?.[param];
    if (typeof spelled === 'string') texts.push(spelled);
    else if (spelled !== undefined) texts.push(...spelled);
    return texts.some((text) => text !== null && (match(text) || match(canonicalText(text))));
  });
}

// C0 controls but tab, DEL and C1 controls: never part of a value an allow rule may match.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/u;

// Invisible and format characters (soft hyphen, zero-width and bidi controls, word joiners,
// variation selectors, the BOM, Hangul fillers) by code point range.
const INVISIBLE_RANGES: readonly (readonly [number, number])[] = [
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x061c, 0x061c],
  [0x115f, 0x1160],
  [0x17b4, 0x17b5],
  [0x180b, 0x180f],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x206f],
  [0x3164, 0x3164],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
  [0xffa0, 0xffa0],
  [0xe0000, 0xe0fff],
];

/**
 * Remove invisible and format characters (zero-width spaces and joiners, bidi controls, the BOM,
 * soft hyphens, variation selectors, tag characters).
 * @param text any text.
 */
export function stripInvisible(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (!INVISIBLE_RANGES.some(([from, to]) => code >= from && code <= to)) out += char;
  }
  return out;
}

/**
 * The spelling a deny or ask rule also checks: Unicode NFKC, invisible and format characters
 * removed, surrounding whitespace trimmed.
 * @param text a parameter value as text.
 */
export function canonicalText(text: string): string {
  return stripInvisible(text.normalize('NFKC')).trim();
}

function stringifyParam(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (typeof value === 'object') return canonicalJson(value);
  return null;
}

/**
 * Split one rule into its tool glob and parameter conditions, or say what is wrong with it.
 * Values may be double-quoted to hold commas or surrounding spaces; `\` escapes the next character.
 * @param rule the rule as written, e.g. `send_notification(recipient:*@example.com)`.
 * @returns the parts, or a message naming the problem.
 */
export function parsePolicyRule(
  rule: string,
): { readonly tool: string; readonly params: readonly { param: string; glob: string }[] } | string {
  const text = rule.trim();
  if (text === '') return 'the rule is empty';
  const open = text.indexOf('(');
  const tool = (open === -1 ? text : text.slice(0, open)).trim();
  if (!TOOL_GLOB.test(tool)) {
    return `"${tool}" is not a tool name or glob (lower-case letters, digits, "_", "*" and "?")`;
  }
  if (open === -1) return { tool, params: [] };
  if (!text.endsWith(')')) return 'the parameter list has no closing ")"';
  const params = parseParams(text.slice(open + 1, -1));
  return typeof params === 'string' ? params : { tool, params };
}

function parseParams(inner: string): { param: string; glob: string }[] | string {
  const params: { param: string; glob: string }[] = [];
  let i = 0;
  const skipSpace = (): void => {
    while (i < inner.length && /\s/.test(inner[i] ?? '')) i += 1;
  };
  for (;;) {
    skipSpace();
    const colon = inner.indexOf(':', i);
    if (colon === -1) {
      return inner.trim() === ''
        ? 'the parentheses are empty; drop them or add param:glob'
        : `expected "param:glob" in "${inner.slice(i).trim()}"`;
    }
    const param = inner.slice(i, colon).trim();
    if (!PARAM_NAME.test(param)) return `"${param}" is not a parameter name`;
    if (params.some((p) => p.param === param)) return `parameter "${param}" appears twice`;
    i = colon + 1;
    skipSpace();
    let glob = '';
    if (inner[i] === '"') {
      i += 1;
      let closed = false;
      while (i < inner.length) {
        const char = inner[i] ?? '';
        if (char === '\\') {
          glob += inner.slice(i, i + 2);
          i += 2;
        } else if (char === '"') {
          closed = true;
          i += 1;
          break;
        } else {
          glob += char;
          i += 1;
        }
      }
      if (!closed) return `the quoted pattern of "${param}" has no closing quote`;
      skipSpace();
    } else {
      while (i < inner.length && inner[i] !== ',') {
        glob += inner[i] === '\\' ? inner.slice(i, i + 2) : inner[i];
        i += inner[i] === '\\' ? 2 : 1;
      }
      glob = glob.trim();
      if (glob === '')
        return `the pattern of "${param}" is empty; write ${param}:"" to match an empty value`;
    }
    params.push({ param, glob });
    if (i >= inner.length) return params;
    if (inner[i] !== ',') return `unexpected "${inner.slice(i)}" after the pattern of "${param}"`;
    i += 1;
  }
}
