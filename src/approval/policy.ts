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

/**
 * Say what the policy decides for a call: the first matching `deny` rule, else the first `ask`
 * rule, else the first `allow` rule, else `none`. A rule matches when its tool glob matches the
 * name and every parameter glob matches that parameter's value (strings as they are, numbers and
 * booleans as text, objects and arrays as canonical JSON); a missing or null parameter never
 * matches.
 * @param policy from {@link compilePolicy}.
 * @param call the tool name and its arguments.
 */
export function evaluatePolicy(
  policy: CompiledPolicy,
  call: { readonly name: string; readonly arguments: Readonly<Record<string, unknown>> },
): PolicyVerdict {
  for (const list of LISTS) {
    const rule = policy[list].find((candidate) => matchesRule(candidate, call));
    if (rule !== undefined) return { verdict: list, rule: rule.source };
  }
  return { verdict: 'none' };
}

function matchesRule(
  rule: CompiledRule,
  call: { readonly name: string; readonly arguments: Readonly<Record<string, unknown>> },
): boolean {
  if (!rule.tool(call.name)) return false;
  return rule.params.every(({ param, match }) => {
    const value = Object.hasOwn(call.arguments, param)
      ? stringifyParam(call.arguments[param])
      : null;
    return value !== null && match(value);
  });
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
