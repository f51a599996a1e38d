import { formatKeyPath, quoteValue } from './config-error.ts';

/** What {@link substituteEnv} produced. */
export interface SubstitutedConfig {
  /** A copy of the input with every `${…}` in string values replaced. */
  readonly data: unknown;
  /** One sentence per reference that could not be resolved. */
  readonly problems: readonly string[];
  /**
   * JSON pointers (`/tools/x/port`) of strings that were exactly one reference, e.g.
   * `port: ${SMTP_PORT}`: these may be read as a number or boolean when the schema asks for one.
   */
  readonly wholeReferences: ReadonlySet<string>;
  /** JSON pointers of strings whose references could not be resolved (already reported). */
  readonly unresolved: ReadonlySet<string>;
  /** The values taken from the environment (not defaults): secrets, as far as vaultd knows. */
  readonly envValues: ReadonlySet<string>;
}

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([^]*))?$/;

/**
 * Replace `${NAME}` and `${NAME:-default}` in every string value (keys are left alone) with the
 * environment's values; `$${` stands for a literal `${`. Like the shell, `:-` also applies the
 * default when the variable is set but empty. Defaults cannot contain `}`.
 * @param data parsed YAML.
 * @param env the environment to read; usually `process.env`.
 */
export function substituteEnv(data: unknown, env: NodeJS.ProcessEnv): SubstitutedConfig {
  const problems: string[] = [];
  const wholeReferences = new Set<string>();
  const unresolved = new Set<string>();
  const envValues = new Set<string>();

  const visit = (value: unknown, path: (string | number)[]): unknown => {
    if (typeof value === 'string') {
      const result = substituteString(value, env, envValues);
      if (result.problem !== null) {
        problems.push(`config key '${formatKeyPath(path)}': ${result.problem}`);
        unresolved.add(toPointer(path));
        return value;
      }
      if (result.whole) wholeReferences.add(toPointer(path));
      return result.text;
    }
    if (Array.isArray(value)) return value.map((item, i) => visit(item, [...path, i]));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) out[key] = visit(item, [...path, key]);
      return out;
    }
    return value;
  };

  return { data: visit(data, []), problems, wholeReferences, unresolved, envValues };
}

function substituteString(
  text: string,
  env: NodeJS.ProcessEnv,
  envValues: Set<string>,
): { text: string; problem: string | null; whole: boolean } {
  let out = '';
  let references = 0;
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      out += '${';
      i += 3;
      continue;
    }
    if (!text.startsWith('${', i)) {
      out += text[i];
      i += 1;
      continue;
    }
    const close = text.indexOf('}', i + 2);
    if (close === -1) {
      return {
        text,
        problem: `unterminated '\${' in ${quoteValue(text)} (write '$\${' for a literal '\${')`,
        whole: false,
      };
    }
    const body = text.slice(i + 2, close);
    const match = REFERENCE.exec(body);
    if (match === null) {
      return {
        text,
        problem: `'\${${body}}' in ${quoteValue(text)} is not a variable reference; write \${NAME} or \${NAME:-default}`,
        whole: false,
      };
    }
    const name = match[1] as string;
    const fallback = match[2];
    const value = env[name];
    if (value !== undefined && !(fallback !== undefined && value === '')) {
      out += value;
      envValues.add(value);
    } else if (fallback !== undefined) out += fallback;
    else {
      return {
        text,
        problem: `environment variable '${name}' is not set (use \${${name}:-default} to give a default)`,
        whole: false,
      };
    }
    references += 1;
    i = close + 1;
  }
  const whole = references === 1 && /^\$\{[^}]*\}$/.test(text);
  return { text: out, problem: null, whole };
}

function toPointer(path: readonly (string | number)[]): string {
  return path.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}
