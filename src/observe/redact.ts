import { replaceUserInfo } from '../protocol/url-userinfo.ts';

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

// Keys whose string values are secrets wherever they appear in the config.
const SECRET_KEY =
  /pass(word)?|secret|token|api_?key|apikey|auth(orization)?|credential|cookie|bearer|private/i;
// Names of environment variables and command-line flags that hold secrets: wider than SECRET_KEY,
// since `OPENAI_KEY` or `--api-key` name nothing else (a config key named `key` may be a path).
// Matched by whole words of the name (`OPENAI_KEY`, `--api-key`, `apiKey`), so that
// `GIT_AUTHOR_NAME`, `XDG_SESSION_TYPE`, `KEYBOARD_LAYOUT` or `--tokenizer` are not.
const SECRET_WORDS = new Set([
  'key',
  'apikey',
  'token',
  'secret',
  'password',
  'passwd',
  'pass',
  'pwd',
  'pat',
  'dsn',
  'cookie',
  'credential',
  'credentials',
  'bearer',
  'auth',
  'authorization',
]);

/** Whether a variable's or a flag's name says it holds a secret: one of its words does. */
function secretName(name: string): boolean {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((word) => SECRET_WORDS.has(word));
}
// user:password@ after a URL's `://` (see replaceUserInfo).
const USER_INFO = /[^\s/@:]+:[^\s/@]+@/y;
// Values this short are not secrets worth hiding (and hiding them would spoil ordinary text).
const MIN_LENGTH = 6;

/** Removes every secret the config holds from a text; see {@link createRedactor}. */
export interface Redactor {
  (text: string): string;
  /** The same for any value: strings inside objects and arrays too; unchanged values are kept. */
  deep<T>(value: T): T;
  /** How many secrets it knows. */
  readonly size: number;
  /**
   * Learn more secrets (a config reloaded on SIGHUP); the ones it knew stay known.
   * @param secrets the new config's secrets.
   */
  add(secrets: Iterable<string>): void;
}

/**
 * Every secret the config holds: string values under secret-looking keys (`pass`, `password`,
 * `token`, `api_key`, `secret`, `authorization`, `headers`…), webhook URLs and their paths (the
 * path of a Slack or Discord webhook is its credential), the user-info of any URL, the values of
 * the environment variables named by `*_env` keys (not their names, when written in upper case with
 * words joined by `_`),
 * and every value `${ENV}` put into the config.
 * Values shorter than 6 characters are left out (hiding `true` or a port number would spoil every
 * text).
 * @param config the loaded config (any JSON value).
 * @param envValues the values `${ENV}` substitution put into it.
 * @param env the environment, for `*_env` keys; defaults to `process.env`.
 */
export function collectSecrets(
  config: unknown,
  envValues: Iterable<string> = [],
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const found = new Set<string>();
  const add = (value: string): void => {
    if (value.length >= MIN_LENGTH) found.add(value);
    // A value read from a file or an env file often ends in a line break that the code using it
    // trims (an API key sent in a header): the trimmed form is the secret too.
    const trimmed = value.trim();
    if (trimmed !== value && trimmed.length >= MIN_LENGTH) found.add(trimmed);
  };
  const visit = (value: unknown, key: string, secretParent: boolean): void => {
    if (typeof value === 'string') {
      // A `*_env` key (`api_key_env: BRAVE_API_KEY`) names a variable: a name written the usual
      // way (upper case, words joined by `_`) is kept readable in the log; anything else there may
      // be a key pasted by mistake, so it stays hidden.
      const variableName =
        /_env$/.test(key) && /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(value) && value.length <= 64;
      if (secretParent || (SECRET_KEY.test(key) && !variableName)) add(value);
      if (/_env$/.test(key) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value)) {
        const fromEnv = env[value];
        if (fromEnv !== undefined) add(fromEnv);
      }
      for (const m of value.matchAll(/\b[a-z][a-z0-9+.-]*:\/\/([^\s/@:]+):([^\s/@]+)@/gi)) {
        add(`${m[1] ?? ''}:${m[2] ?? ''}`);
        add(m[2] ?? '');
      }
      if (key === 'url' || secretParent) {
        try {
          const url = new URL(value);
          if (/hooks\.|webhook/i.test(value) || secretParent) {
            add(value);
            if (url.pathname.length >= MIN_LENGTH + 1) add(url.pathname.slice(1));
            if (url.search.length > 1) add(url.search.slice(1));
          }
        } catch {
          // not a URL
        }
      }
      return;
    }
    if (Array.isArray(value)) {
      // A program's arguments (`args` of an MCP or language server, a command tool): the value of
      // a secret-looking flag, `--api-key VALUE` or `--api-key=VALUE` (review finding: a server
      // that echoed its command line put the key into the note).
      value.forEach((item, i) => {
        visit(item, key, secretParent);
        if (key !== 'args' || typeof item !== 'string') return;
        const flag = /^--?([\w.-]+)(?:=(.*))?$/s.exec(item);
        // `--no-auth` turns something off: what follows is not its value.
        if (flag === null || /^no-/.test(flag[1] as string) || !secretName(flag[1] as string))
          return;
        const next = value[i + 1];
        if (flag[2] !== undefined) add(flag[2]);
        // A path after the flag names a file holding the secret, not the secret.
        else if (typeof next === 'string' && !next.startsWith('-') && !next.startsWith('/'))
          add(next);
      });
      return;
    }
    if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        // In the environment of a program vaultd starts (`env` of an MCP or language server, a
        // command tool), a variable whose name says so by its words (`OPENAI_KEY`, `DB_PASSWORD`,
        // which SECRET_KEY missed; not `GIT_AUTHOR_NAME`, which it took for `auth`).
        if (key === 'env' && typeof v === 'string') {
          if (secretName(k)) add(v);
          visit(v, '', secretParent);
          continue;
        }
        // Webhook channel maps and request headers hold nothing but secrets.
        visit(v, k, secretParent || k === 'channels' || k === 'headers');
      }
    }
  };
  visit(config, '', false);
  for (const value of envValues) add(value);
  return [...found];
}

/**
 * The base64 and base64url spellings of a secret inside any longer base64 text (a `Basic`
 * authorization header of `user:password` holds the password so): for each of the three byte
 * offsets it may start at, the characters that only its bytes decide. Cores shorter than 8
 * characters are left out (they would match ordinary words).
 */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const out: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // Character i holds bits 6i to 6i+6 of the stream; the secret's are 8·offset to the end.
    const core = encoded.slice(
      Math.ceil((8 * offset) / 6),
      Math.floor((8 * (offset + bytes.length)) / 6),
    );
    if (core.length < 8) continue;
    out.push(core);
    const url = core.replace(/\+/g, '-').replace(/\//g, '_');
    if (url !== core) out.push(url);
  }
  return out;
}

/**
 * A redactor for these secrets: every occurrence (and its JSON-escaped spelling, as it appears in
 * a log line, its URL- and form-encoded spellings and its base64 inside any base64 text) becomes
 * `[redacted]`, longest first, in one pass of one regular expression; URL
 * user-info (`https://user:pass@`) is removed whatever it holds. Without secrets only the
 * user-info rule applies.
 * @param secrets the secrets, e.g. from {@link collectSecrets}.
 */
export function createRedactor(secrets: Iterable<string>): Redactor {
  const spellings = new Set<string>();
  let pattern: RegExp | undefined;
  const learn = (more: Iterable<string>): void => {
    for (const secret of more) {
      if (secret.length < MIN_LENGTH) continue;
      spellings.add(secret);
      spellings.add(JSON.stringify(secret).slice(1, -1));
      spellings.add(encodeURIComponent(secret));
      // Form encoding (`+` for a space, `*` and `'` escaped as URLSearchParams does).
      spellings.add(new URLSearchParams({ s: secret }).toString().slice(2));
      for (const core of base64Cores(secret)) spellings.add(core);
    }
    const sorted = [...spellings].sort((a, b) => b.length - a.length);
    pattern =
      sorted.length === 0
        ? undefined
        : new RegExp(sorted.map((s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'), 'g');
  };
  learn(secrets);
  const redact = ((text: string): string => {
    if (typeof text !== 'string' || text === '') return text;
    let out = text.includes('://')
      ? replaceUserInfo(text, USER_INFO, (scheme) => `${scheme}${REDACTED}@`)
      : text;
    if (pattern !== undefined) out = out.replace(pattern, REDACTED);
    return out;
  }) as Redactor;
  // Copies only what changes: most payloads hold no secret, and are returned as they are without
  // allocating anything (the event bus redacts every event).
  const deep = <T>(value: T): T => {
    if (typeof value === 'string') return redact(value) as T;
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const next = deep(item);
        if (next !== item) (out ??= [...(value as unknown[])])[i] = next;
      }
      return (out ?? value) as T;
    }
    if (value !== null && typeof value === 'object' && !(value instanceof Error)) {
      const record = value as Record<string, unknown>;
      let out: Record<string, unknown> | undefined;
      for (const k of Object.keys(record)) {
        const v = record[k];
        const next = deep(v);
        if (next === v) continue;
        if (out === undefined) {
          out = {};
          for (const key of Object.keys(record)) setOwn(out, key, record[key]);
        }
        setOwn(out, k, next);
      }
      return (out ?? value) as T;
    }
    return value;
  };
  Object.defineProperty(redact, 'deep', { value: deep });
  Object.defineProperty(redact, 'size', { get: () => spellings.size });
  Object.defineProperty(redact, 'add', { value: learn });
  return redact;
}

/** Set an own data property, a `__proto__` key included (never the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}
