/** Thrown when the configuration cannot be used: every problem found, one per line. */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  /** Each problem as one sentence naming the key path and quoting the bad value. */
  readonly problems: readonly string[];
  /** The config file the problems were found in, when there was one. */
  readonly file: string | undefined;

  /**
   * @param problems one sentence per problem; at least one.
   * @param file path of the config file, quoted in the message's first line.
   */
  constructor(problems: readonly string[], file?: string) {
    const head = file === undefined ? 'invalid config:' : `invalid config in ${file}:`;
    super([head, ...problems.map((p) => `  - ${p}`)].join('\n'));
    this.name = 'ConfigError';
    this.problems = Object.freeze([...problems]);
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
