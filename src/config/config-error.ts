/**
 * Thrown when the configuration cannot be used: every problem found, one per line. Problems of
 * the environment vaultd reads directly (`VAULTD_LOG_LEVEL`) are told apart from the file's, so
 * that a bad variable is not reported as a bad config file.
 */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  /** Each problem as one sentence naming the key path (or variable) and quoting the bad value. */
  readonly problems: readonly string[];
  /** The problems among {@link problems} that are environment variables', not the file's. */
  readonly environmentProblems: readonly string[];
  /** The config file the problems were found in, when there was one. */
  readonly file: string | undefined;

  /**
   * @param problems one sentence per problem of the config (file, `--vault`); may be empty when
   *   `environment` is not.
   * @param file path of the config file, quoted in the message's first line.
   * @param environment one sentence per bad environment variable, each naming it; none by default.
   */
  constructor(problems: readonly string[], file?: string, environment: readonly string[] = []) {
    const lines: string[] = [];
    if (problems.length > 0) {
      lines.push(file === undefined ? 'invalid config:' : `invalid config in ${file}:`);
      lines.push(...problems.map((p) => `  - ${p}`));
    }
    if (lines.length === 0 && environment.length === 1) lines.push(environment[0] as string);
    else if (environment.length > 0) {
      lines.push('invalid environment:', ...environment.map((p) => `  - ${p}`));
    }
    super(lines.join('\n'));
    this.name = 'ConfigError';
    this.problems = Object.freeze([...problems, ...environment]);
    this.environmentProblems = Object.freeze([...environment]);
    this.file = file;
  }
}

/**
 * Quote a value for a message: strings in single quotes, everything else as compact JSON.
 * @param value any config value.
 */
export function quoteValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === undefined) return 'undefined';
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Spell a key path the way an operator writes it in YAML: `folders.done`, `policy.allow[0]`.
 * @param segments keys and array indexes from the root.
 */
export function formatKeyPath(segments: readonly (string | number)[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out === '' ? '(root)' : out;
}
