import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { RE2JS } from 're2js';
import { checkSchemaMeta, makeToolAjv, upgradeDraft7, type ValidateFunction } from './ajv.ts';

/** Compiles one JSON Schema into a validator; throws when it cannot. */
export type SchemaCompiler = (schema: object) => ValidateFunction;

// A `pattern` (or `patternProperties` key) of a hostile schema, run by JavaScript's backtracking
// engine on an argument, can hold the main thread for ever: `^(a|a)*$` against forty `a`s and a
// `!` does. RE2 runs in time linear in the text; what it cannot run in linear time (lookaround,
// backreferences) it refuses to compile, and so the schema is refused.
/**
 * Instructions of a pattern's RE2 program. RE2's time is linear in the text, with a factor that
 * grows with the program: `.{1000}.{1000}.{1000}` (3,002) took 0.2 s for each megabyte of an
 * argument; the patterns schemas use take a few dozen (`^.{1,255}$` 513).
 */
const MAX_PATTERN_PROGRAM = 2000;

const re2: RegExpEngine = Object.assign(
  (pattern: string, _flags: string) => {
    const compiled = RE2JS.compile(toRe2Syntax(pattern));
    if (compiled.programSize() > MAX_PATTERN_PROGRAM) {
      throw new Error(
        `pattern ${JSON.stringify(pattern.slice(0, 100))} is too large to check: ${compiled.programSize()} RE2 instructions, at most ${MAX_PATTERN_PROGRAM}`,
      );
    }
    return {
      test: (text: string): boolean => compiled.test(text),
      // Ajv keeps one engine object per instance and pattern, keyed by this text.
      toString: (): string => `/${pattern}/re2`,
    };
  },
  { code: 're2' },
);

/**
 * A compiler for the schemas of a party vaultd does not trust (an MCP server's tools): Ajv
 * configured as for every tool, but with RE2 for `pattern` and `patternProperties` (linear time;
 * a pattern RE2 cannot run makes the schema fail to compile), and an instance of its own that
 * registers no `$id`, so one schema can neither clash with nor be referenced by another. Make one
 * per tool list: the instance and everything it compiled are freed with the validators.
 * @param options `useDefaults: false` to check a value without filling in the schema's defaults.
 */
export function makeUntrustedCompiler(options: { useDefaults?: boolean } = {}): SchemaCompiler {
  const ajv = makeToolAjv({
    validateSchema: false,
    addUsedSchema: false,
    code: { regExp: re2 },
    ...(options.useDefaults === false ? { useDefaults: false } : {}),
  });
  return (schema) => {
    const upgraded = upgradeDraft7(schema) as object;
    checkSchemaMeta(upgraded);
    return ajv.compile(upgraded);
  };
}

/**
 * A pattern in ECMAScript syntax written for RE2: `\uXXXX` and `\u{X…}` become `\x{X…}`, which
 * is RE2's spelling; the rest is left as it is (where the two differ RE2 refuses the pattern).
 * @param pattern an ECMAScript regular expression's source.
 */
function toRe2Syntax(pattern: string): string {
  return pattern.replace(
    /\\(?:u([0-9a-fA-F]{4})|u\{([0-9a-fA-F]{1,6})\}|[^])/g,
    (all, four, braced) =>
      typeof four === 'string' || typeof braced === 'string'
        ? `\\x{${(four as string | undefined) ?? (braced as string)}}`
        : all,
  );
}
