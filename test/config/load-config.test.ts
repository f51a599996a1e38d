import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  CONFIG_DEFAULTS,
  CONFIG_SCHEMA,
  ConfigError,
  loadConfig,
  sampleConfigText,
  type Config,
} from '../../src/config/index.ts';
import type { JsonSchema } from '../../src/protocol/types.ts';
import { mcpConfigSchema } from '../../src/tools/mcp/config.ts';
import { searchWebConfigSchema } from '../../src/tools/search-web/config.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vaultd-config-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

let counter = 0;
async function configFile(text: string): Promise<string> {
  counter += 1;
  const file = join(dir, `config-${counter}.yaml`);
  await writeFile(file, text);
  return file;
}

async function load(
  text: string,
  env: NodeJS.ProcessEnv = {},
  extra: Record<string, unknown> = {},
): Promise<Config> {
  return loadConfig({ file: await configFile(`vault: v\n${text}`), env, ...extra });
}

async function problemsOf(
  text: string,
  env: NodeJS.ProcessEnv = {},
  extra: Record<string, unknown> = {},
): Promise<readonly string[]> {
  try {
    await load(text, env, extra);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
    assert.equal(error.code, 'CONFIG_INVALID');
    for (const problem of error.problems) assert.ok(error.message.includes(problem));
    return error.problems;
  }
  assert.fail('expected a ConfigError');
}

async function errorOf(text: string, env: NodeJS.ProcessEnv = {}): Promise<ConfigError> {
  try {
    await load(text, env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a ConfigError');
}

describe('loadConfig defaults', () => {
  it('fills every default when the file only names the vault', async () => {
    const config = await load('');
    assert.deepEqual(
      { ...config, vault: undefined },
      {
        vault: undefined,
        concurrency: 10,
        timeout_ms: 30000,
        settle_ms: 1500,
        max_note_bytes: 5 * 1024 * 1024,
        max_calls_per_note: 10_000,
        reconcile_cron: '*/30 * * * * *',
        cache_ttl_ms: 60000,
        retry: { attempts: 3, base_delay_ms: 200 },
        folders: {
          inbox: 'Needs_Action',
          in_progress: 'In_Progress',
          pending: 'Pending_Approval',
          approved: 'Approved',
          rejected: 'Rejected',
          done: 'Done',
          failed: 'Failed',
          logs: 'Logs',
          outbox: 'Outbox',
        },
        log: { level: 'info' },
        http: {
          host: '127.0.0.1',
          port: null,
          allowed_hosts: [],
          allowed_origins: [],
          max_connections: 64,
          api_token_env: 'VAULTD_API_TOKEN',
        },
        shutdown: { grace_ms: 10000 },
        approval: {
          expire_after: '7d',
          expire_after_ms: 604800000,
          check_cron: '0 * * * * *',
          vault_decisions: true,
          max_pending: 20_000,
        },
        ledger: {
          replay_window: '10m',
          replay_window_ms: 600000,
          retention: '30d',
          retention_ms: 2592000000,
        },
        policy: { allow: [], ask: [], deny: [] },
        dashboard_interval_ms: 5000,
        parse_timeout_ms: 20000,
        plugins: [],
        tools: {},
      },
    );
  });

  it('keeps the defaults of a section where only some keys are given', async () => {
    const config = await load(
      'retry: {attempts: 5}\nfolders: {done: Archive}\napproval: {expire_after: 12h}',
    );
    assert.deepEqual(config.retry, { attempts: 5, base_delay_ms: 200 });
    assert.equal(config.folders.done, 'Archive');
    assert.equal(config.folders.inbox, 'Needs_Action');
    assert.equal(config.approval.expire_after_ms, 12 * 3600 * 1000);
    assert.equal(config.approval.check_cron, '0 * * * * *');
  });

  it('parses every duration unit', async () => {
    const cases: [string, number][] = [
      ['1500ms', 1500],
      ['45s', 45000],
      ['30m', 1800000],
      ['2d', 172800000],
      ['1w', 604800000],
    ];
    for (const [text, ms] of cases) {
      const config = await load(`approval: {expire_after: '${text}'}`);
      assert.equal(config.approval.expire_after_ms, ms, text);
    }
  });

  it('uses defaults without a file when the vault comes from the option', () => {
    const config = loadConfig({ vault: 'some/vault', env: {} });
    assert.equal(config.vault, resolve('some/vault'));
    assert.equal(config.concurrency, 10);
  });

  it('requires a vault', () => {
    assert.throws(
      () => loadConfig({ env: {} }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /no vault given/);
        return true;
      },
    );
  });

  it('returns a deep-frozen config', async () => {
    const config = await load(
      'tools: {search_web: {provider: searxng, extra: {deep: [1]}}}\npolicy: {deny: [shell_exec]}',
    );
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.folders));
    assert.ok(Object.isFrozen(config.policy.deny));
    assert.ok(Object.isFrozen(config.tools['search_web']));
    assert.ok(
      Object.isFrozen((config.tools['search_web'] as { extra: { deep: number[] } }).extra.deep),
    );
    assert.throws(() => {
      (config as { concurrency: number }).concurrency = 3;
    }, TypeError);
  });
});

describe('loadConfig vault resolution', () => {
  it('resolves a relative vault against the config file folder', async () => {
    const file = await configFile('vault: ../my-vault\n');
    assert.equal(loadConfig({ file, env: {} }).vault, resolve(dir, '..', 'my-vault'));
  });

  it('keeps an absolute vault as it is', async () => {
    const file = await configFile('vault: /srv/vault\n');
    assert.equal(loadConfig({ file, env: {} }).vault, '/srv/vault');
  });

  it('resolves plugin paths against the config file folder', async () => {
    const file = await configFile('vault: v\nplugins: [./tools/mine.ts, /opt/other.js]\n');
    assert.deepEqual(loadConfig({ file, env: {} }).plugins, [
      join(dir, 'tools', 'mine.ts'),
      '/opt/other.js',
    ]);
  });

  it('reads ~/ in the vault and plugin paths as the home folder, as a shell would', async () => {
    // QA replay: the user unit's `vault: ~/Vault` named ~/.config/vaultd/~/Vault.
    const file = await configFile("vault: ~/Vault\nplugins: ['~/tools/mine.ts', ./~x.ts]\n");
    const config = loadConfig({ file, env: {} });
    assert.equal(config.vault, join(homedir(), 'Vault'));
    assert.deepEqual(config.plugins, [join(homedir(), 'tools', 'mine.ts'), join(dir, '~x.ts')]);
  });

  it('lets the vault option win, relative to the working directory', async () => {
    const file = await configFile('vault: ../my-vault\n');
    assert.equal(
      loadConfig({ file, vault: 'cli-vault', env: {} }).vault,
      resolve(process.cwd(), 'cli-vault'),
    );
  });
});

describe('loadConfig environment substitution', () => {
  it('substitutes a set variable inside a longer string', async () => {
    const config = await load('tools: {x: {url: "http://${HOST}:8080/"}}', {
      HOST: 'search.local',
    });
    assert.equal(config.tools['x']?.['url'], 'http://search.local:8080/');
  });

  it('uses the default when the variable is unset or empty, the value when set', async () => {
    const text = 'tools: {x: {a: "${A:-fallback}", b: "${B:-fallback}", c: "${C:-fallback}"}}';
    const config = await load(text, { B: '', C: 'set' });
    assert.deepEqual(config.tools['x'], { a: 'fallback', b: 'fallback', c: 'set' });
  });

  it('reports a missing variable without a default, naming the key and the variable', async () => {
    const problems = await problemsOf(
      'tools:\n  send_notification:\n    email: {pass: "${SMTP_PASS}"}',
    );
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /tools\.send_notification\.email\.pass/);
    assert.match(problems[0] as string, /SMTP_PASS/);
  });

  it('treats $${ as a literal ${', async () => {
    const config = await load('tools: {x: {template: "cost: $${PRICE} and ${P}"}}', {
      PRICE: 'no',
      P: 'yes',
    });
    assert.equal(config.tools['x']?.['template'], 'cost: ${PRICE} and yes');
  });

  it('reports an unterminated reference', async () => {
    const problems = await problemsOf('tools: {x: {a: "${OOPS"}}');
    assert.match(problems[0] as string, /tools\.x\.a.*unterminated/);
  });

  it('reads a value that is one whole reference as the number the schema wants', async () => {
    const config = await load('concurrency: "${CONC}"\nhttp: {port: "${PORT}"}', {
      CONC: '4',
      PORT: '9090',
    });
    assert.equal(config.concurrency, 4);
    assert.equal(config.http.port, 9090);
  });

  it('does not turn a literal quoted number into a number', async () => {
    const problems = await problemsOf('concurrency: "4"');
    assert.deepEqual(problems, ["config key 'concurrency' must be an integer (got '4')"]);
  });

  it('reports a variable that does not hold a number once, at its key', async () => {
    const problems = await problemsOf('http: {port: "${PORT}"}', { PORT: 'eighty' });
    assert.deepEqual(problems, [
      "config key 'http.port' must be an integer or null (got 'eighty')",
    ]);
  });
});

describe('loadConfig invalid values', () => {
  const cases: [string, string, RegExp][] = [
    [
      'string expected',
      'folders: {done: 42}',
      /^config key 'folders\.done' must be a string \(got 42\)$/,
    ],
    [
      'integer expected',
      'concurrency: 2.5',
      /^config key 'concurrency' must be an integer \(got 2\.5\)$/,
    ],
    ['below minimum', 'concurrency: 0', /^config key 'concurrency' must be at least 1 \(got 0\)$/],
    ['negative', 'settle_ms: -5', /^config key 'settle_ms' must be at least 0 \(got -5\)$/],
    [
      'above maximum',
      'http: {port: 70000}',
      /^config key 'http\.port' must be at most 65535 \(got 70000\)$/,
    ],
    [
      'enum',
      'log: {level: loud}',
      /^config key 'log\.level' must be one of .*'info'.* \(got 'loud'\)$/,
    ],
    [
      'mapping expected',
      'retry: 3',
      /^config key 'retry' must be a mapping of keys to values \(got 3\)$/,
    ],
    [
      'list expected',
      'policy: {deny: shell_exec}',
      /^config key 'policy\.deny' must be a list \(got 'shell_exec'\)$/,
    ],
    [
      'list item',
      'policy: {allow: [search_web, 7]}',
      /^config key 'policy\.allow\[1\]' must be a string \(got 7\)$/,
    ],
    ['empty string', 'http: {host: ""}', /^config key 'http\.host' must not be empty$/],
    [
      'duration',
      'approval: {expire_after: 7 days}',
      /^config key 'approval\.expire_after' must be a duration .* \(got '7 days'\)$/,
    ],
    [
      'zero duration',
      'approval: {expire_after: 0d}',
      /^config key 'approval\.expire_after' must be a duration above zero \(got '0d'\)$/,
    ],
    [
      'cron',
      "reconcile_cron: 'every minute'",
      /^config key 'reconcile_cron' is not a valid cron expression \(got 'every minute'\)/,
    ],
    [
      'cron seconds out of range',
      "approval: {check_cron: '61 * * * * *'}",
      /^config key 'approval\.check_cron' is not a valid cron expression/,
    ],
    ['tool name', 'tools: {Search: {}}', /^config key 'tools\.Search' is not an allowed name/],
    [
      'tool section',
      'tools: {search_web: true}',
      /^config key 'tools\.search_web' must be a mapping of keys to values \(got true\)$/,
    ],
  ];
  for (const [name, text, expected] of cases) {
    it(`reports ${name} naming the key`, async () => {
      const problems = await problemsOf(text);
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.match(problems[0] as string, expected);
    });
  }

  it('reports an unknown key with the closest known one', async () => {
    const problems = await problemsOf('concurency: 5');
    assert.deepEqual(problems, ["unknown config key 'concurency' (did you mean 'concurrency'?)"]);
  });

  it('suggests a key of the same name one level down', async () => {
    const problems = await problemsOf('inbox: Inbox');
    assert.deepEqual(problems, ["unknown config key 'inbox' (did you mean 'folders.inbox'?)"]);
  });

  it('reports an unknown nested key and lists the allowed ones when nothing is close', async () => {
    const problems = await problemsOf('retry: {zzzzzz: 1}');
    assert.match(
      problems[0] as string,
      /^unknown config key 'retry\.zzzzzz'; allowed here: attempts, base_delay_ms$/,
    );
  });

  it('lists every problem at once, one per line', async () => {
    const problems = await problemsOf(
      'concurrency: x\nfolders: {done: 1, failed: /abs}\nlog: {level: x}\nretryy: {}',
    );
    assert.equal(problems.length, 5, problems.join('\n'));
    try {
      await load('concurrency: x\nfolders: {done: 1}');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.message.split('\n').length, 3);
      assert.match(error.message, /^invalid config in .*config-\d+\.yaml:$/m);
    }
  });

  it('reports YAML syntax errors with line and column', async () => {
    const file = await configFile('vault: v\nconcurrency: [1, 2\n');
    assert.throws(
      () => loadConfig({ file, env: {} }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.problems[0] as string, /^line \d+, column \d+: /);
        return true;
      },
    );
  });

  it('reports duplicate keys', async () => {
    const problems = await problemsOf('concurrency: 1\nconcurrency: 2');
    assert.match(problems[0] as string, /line 3/);
  });

  it('reports a file that is not a mapping and a file that does not exist', async () => {
    const list = await configFile('- a\n- b\n');
    assert.throws(() => loadConfig({ file: list, env: {} }), /must be a mapping/);
    assert.throws(() => loadConfig({ file: join(dir, 'nope.yaml'), env: {} }), /does not exist/);
  });

  it('never evaluates custom tags', async () => {
    const file = await configFile(
      'vault: v\ntools: {x: {a: !!js/function "function () { return 1 }"}}\n',
    );
    const config = loadConfig({ file, env: {} });
    assert.equal(typeof config.tools['x']?.['a'], 'string');
  });
});

describe('loadConfig folder names', () => {
  const cases: [string, string, RegExp][] = [
    [
      'parent reference',
      'folders: {done: ../Done}',
      /'folders\.done' must not contain '\.\.' \(got '\.\.\/Done'\)/,
    ],
    [
      'absolute path',
      'folders: {failed: /tmp/Failed}',
      /'folders\.failed' must be relative to the vault/,
    ],
    ['dot folder', 'folders: {logs: .logs}', /'folders\.logs' must not start with a dot/],
    ['dot segment', 'folders: {logs: a/./b}', /'folders\.logs' must be a plain folder name/],
    ['backslash', 'folders: {logs: "a\\\\b"}', /'folders\.logs' must use '\/'/],
    [
      'same folder',
      'folders: {done: Archive, failed: archive}',
      /'folders\.done' and 'folders\.failed' name the same folder 'Archive'/,
    ],
    [
      'nested folder',
      'folders: {done: Needs_Action/Done}',
      /'folders\.done' names a folder inside 'folders\.inbox'/,
    ],
  ];
  for (const [name, text, expected] of cases) {
    it(`rejects a ${name}`, async () => {
      const problems = await problemsOf(text);
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.match(problems[0] as string, expected);
    });
  }

  it('accepts nested relative names that do not overlap', async () => {
    const config = await load('folders: {done: Archive/Done, failed: Archive/Failed}');
    assert.equal(config.folders.done, 'Archive/Done');
  });
});

describe('loadConfig tool sections', () => {
  const toolSchemas = {
    search_web: {
      type: 'object',
      properties: {
        provider: { enum: ['default', 'searxng'], default: 'default' },
        url: { type: 'string', format: 'uri' },
        port: { type: 'integer' },
      },
      additionalProperties: false,
    },
  };

  it('validates a tool section against its schema, naming the key', async () => {
    const problems = await problemsOf(
      'tools: {search_web: {provider: bing, url: "not a url", extra: 1}}',
      {},
      { toolSchemas },
    );
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.ok(
      problems.some((p) =>
        /^config key 'tools\.search_web\.provider' must be one of 'default', 'searxng' \(got 'bing'\)$/.test(
          p,
        ),
      ),
    );
    assert.ok(
      problems.some((p) => /^config key 'tools\.search_web\.url' must match format "uri"/.test(p)),
    );
    assert.ok(problems.some((p) => /^unknown config key 'tools\.search_web\.extra'/.test(p)));
  });

  it('applies the tool schema defaults, also to an absent section, and reads a whole reference as a number', async () => {
    const config = await load(
      'tools: {search_web: {port: "${P}"}}',
      { P: '8888' },
      { toolSchemas },
    );
    assert.deepEqual(config.tools['search_web'], { port: 8888, provider: 'default' });
    const bare = await load('', {}, { toolSchemas });
    assert.deepEqual(bare.tools['search_web'], { provider: 'default' });
  });

  it('a conditional requirement names the missing key and its condition, not the if/then wrapper', async () => {
    const problems = await problemsOf(
      'tools: {search_web: {provider: searxng}}',
      {},
      { toolSchemas: { search_web: searchWebConfigSchema } },
    );
    assert.deepEqual(problems, [
      "config key 'tools.search_web' is missing the required key 'url' (needed when 'tools.search_web.provider' is 'searxng')",
    ]);
  });

  it('alternatives that each require one key are said once: one of them, and only one', async () => {
    const toolSchemas = { mcp: mcpConfigSchema };
    assert.deepEqual(await problemsOf('tools: {mcp: {servers: {foo: {}}}}', {}, { toolSchemas }), [
      "config key 'tools.mcp.servers.foo' needs one of the keys 'command', 'url'",
    ]);
    assert.deepEqual(
      await problemsOf(
        'tools: {mcp: {servers: {foo: {command: x, url: "http://a"}}}}',
        {},
        { toolSchemas },
      ),
      [
        "config key 'tools.mcp.servers.foo' must have only one of the keys 'command', 'url', not several",
      ],
    );
  });

  it('leaves sections of tools without a schema unchecked', async () => {
    const config = await load('tools: {my_tool: {anything: [1, 2]}}', {}, { toolSchemas });
    assert.deepEqual(config.tools['my_tool'], { anything: [1, 2] });
  });
});

describe('the outbox folder: folders.outbox and the notify pack name one folder', () => {
  it('files messages into folders.outbox when only it is set', async () => {
    const config = await load('folders: {outbox: Mail}');
    assert.equal(config.folders.outbox, 'Mail');
    assert.deepEqual(config.tools['notify'], { outbox: { folder: 'Mail' } });
  });

  it('keeps the rest of the pack section, under its legacy key too', async () => {
    const config = await load(
      'folders: {outbox: Mail}\ntools: {send_notification: {default_method: outbox}}',
    );
    assert.deepEqual(config.tools['send_notification'], {
      default_method: 'outbox',
      outbox: { folder: 'Mail' },
    });
    assert.equal(config.tools['notify'], undefined);
  });

  it("creates and cleans the tool's folder when only the tool's is set", async () => {
    const config = await load('tools: {notify: {outbox: {folder: Letters}}}');
    assert.equal(config.folders.outbox, 'Letters');
  });

  it('refuses two different folders', async () => {
    const problems = await problemsOf(
      'folders: {outbox: Mail}\ntools: {notify: {outbox: {folder: Letters}}}',
    );
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /'folders\.outbox'.*'tools\.notify\.outbox\.folder'.*set one/);
  });

  it('leaves both at their default when neither is set', async () => {
    const config = await load('');
    assert.equal(config.folders.outbox, 'Outbox');
    assert.equal(config.tools['notify'], undefined);
  });
});

describe('shipped config', () => {
  it('config/vaultd.yaml loads and points at the example vault', () => {
    const file = resolve(import.meta.dirname, '../../config/vaultd.yaml');
    const config = loadConfig({ file, env: {} });
    assert.equal(config.vault, resolve(import.meta.dirname, '../../vault-example'));
    assert.equal(config.tools['send_notification']?.['default_method'], 'outbox');
  });

  it('config/vaultd.yaml names every key of the schema, set or commented, and its values are the defaults', () => {
    const text = readFileSync(resolve(import.meta.dirname, '../../config/vaultd.yaml'), 'utf8');
    const missing: string[] = [];
    const walk = (schema: JsonSchema, path: string[]): void => {
      const properties = (schema['properties'] ?? {}) as Record<string, JsonSchema>;
      for (const [key, child] of Object.entries(properties)) {
        if (path.length === 0 && key === 'tools') continue;
        // Written under its section, as a key of its own, set or commented out.
        const indent = '  '.repeat(path.length);
        if (!new RegExp(`^${indent}(# )?${key}:`, 'm').test(text))
          missing.push([...path, key].join('.'));
        if (child['properties'] !== undefined) walk(child, [...path, key]);
      }
    };
    walk(CONFIG_SCHEMA, []);
    assert.deepEqual(missing, []);
    const config = loadConfig({ file: resolve(import.meta.dirname, '../../config/vaultd.yaml') });
    const { vault: _vault, tools: _tools, ...rest } = config;
    const { tools: _defaultTools, ...defaults } = CONFIG_DEFAULTS;
    assert.deepEqual(rest, defaults);
  });

  it('sampleConfigText is the same commented text with the vault line replaced', async () => {
    const text = sampleConfigText('.');
    assert.match(text, /^# vaultd configuration/);
    assert.equal((parse(text) as { vault: string }).vault, '.');
    const file = await configFile(text);
    assert.equal(loadConfig({ file, env: {} }).vault, dir);
  });
});

describe('http options no request could match', () => {
  it('refuses an allowed origin with a trailing slash, a path or a default port, naming the origin to write', async () => {
    // `Origin` is scheme://host[:port]: such an entry never matched, and the page was refused.
    const problems = await problemsOf(
      "http: {allowed_origins: ['https://ok.example', 'https://x.example/', 'https://y.example/dash', 'https://z.example:443', 'http://w.example:8080', 'https://Case.Example']}",
    );
    assert.deepEqual(problems, [
      "config key 'http.allowed_origins[1]' must be an origin as browsers send it, scheme://host[:port] with no path, trailing slash or default port (got 'https://x.example/'); write 'https://x.example'",
      "config key 'http.allowed_origins[2]' must be an origin as browsers send it, scheme://host[:port] with no path, trailing slash or default port (got 'https://y.example/dash'); write 'https://y.example'",
      "config key 'http.allowed_origins[3]' must be an origin as browsers send it, scheme://host[:port] with no path, trailing slash or default port (got 'https://z.example:443'); write 'https://z.example'",
    ]);
    assert.deepEqual(
      (await load("http: {allowed_origins: ['https://dash.example:8443']}")).http.allowed_origins,
      ['https://dash.example:8443'],
    );
  });

  it('refuses an API token with whitespace in it when the listener is on, without showing the token', async () => {
    // The header is parsed as `Bearer <one word>`: such a token passed the 16-character check
    // and could never match, so every API request got 401.
    for (const token of [
      'two words of a token 0123',
      'a-token-of-the-operator-0123\n',
      '\ta-token-of-the-operator',
    ]) {
      const error = await errorOf('http: {port: 9464}', { VAULTD_API_TOKEN: token });
      assert.equal(error.environmentProblems.length, 1, JSON.stringify(token));
      assert.match(
        error.environmentProblems[0] as string,
        /^environment variable VAULTD_API_TOKEN \(http\.api_token_env\) holds a token with whitespace in it/,
      );
      assert.ok(!error.message.includes(token.trim()), 'the token is not shown');
    }
    const other = await errorOf('http: {port: 9464, api_token_env: MY_TOKEN}', {
      MY_TOKEN: 'a b c d e f g h i j k',
    });
    assert.match(other.environmentProblems[0] as string, /^environment variable MY_TOKEN /);
    // A token of one word, and any token while the listener is off, load.
    await load('http: {port: 9464}', { VAULTD_API_TOKEN: 'a-token-of-the-operator-0123' });
    await load('', { VAULTD_API_TOKEN: 'two words of a token 0123' });
  });
});

describe('VAULTD_LOG_LEVEL', () => {
  it('overrides log.level when set, and is ignored when empty', async () => {
    assert.equal(
      (await load('log: {level: warn}', { VAULTD_LOG_LEVEL: 'debug' })).log.level,
      'debug',
    );
    assert.equal((await load('log: {level: warn}', { VAULTD_LOG_LEVEL: '' })).log.level, 'warn');
    assert.equal((await load('')).log.level, 'info');
  });

  it("an invalid level is the variable's problem, not the file's: named, quoted, levels listed", async () => {
    const problems = await problemsOf('', { VAULTD_LOG_LEVEL: 'loud' });
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /VAULTD_LOG_LEVEL must be one of .* \(got 'loud'\)/);
    const error = await errorOf('', { VAULTD_LOG_LEVEL: 'loud' });
    assert.deepEqual(error.environmentProblems, problems);
    assert.doesNotMatch(error.message, /invalid config/);
    assert.match(
      error.message,
      /^environment variable VAULTD_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent \(got 'loud'\)/,
    );
  });

  it("with a bad file too, the file's problems and the variable's are reported apart", async () => {
    const error = await errorOf('log: {level: loud}', { VAULTD_LOG_LEVEL: 'loud' });
    assert.equal(error.problems.length, 2);
    assert.equal(error.environmentProblems.length, 1);
    assert.match(
      error.message,
      /^invalid config in .*:\n {2}- config key 'log\.level' .*\ninvalid environment:\n {2}- environment variable VAULTD_LOG_LEVEL /,
    );
  });
});

describe('loadConfig sections of packs that are off unless configured', () => {
  const schema = {
    type: 'object',
    properties: { enabled: { type: 'boolean' }, depth: { type: 'integer', default: 3 } },
    additionalProperties: false,
  };
  const extra = { toolSchemas: { quiet: schema }, optionalTools: new Set(['quiet']) };

  it('leaves an absent section absent, checks and defaults a present one', async () => {
    assert.equal((await load('', {}, extra)).tools['quiet'], undefined);
    const on = await load('tools:\n  quiet:\n    enabled: true\n', {}, extra);
    assert.deepEqual(on.tools['quiet'], { enabled: true, depth: 3 });
    const problems = await problemsOf('tools:\n  quiet:\n    depth: deep\n', {}, extra);
    assert.ok(
      problems.some((p) => p.includes('tools.quiet.depth')),
      problems.join('\n'),
    );
  });

  it('still defaults the section of a pack that is on by default', async () => {
    const config = await load('', {}, { toolSchemas: { loud: schema } });
    assert.deepEqual(config.tools['loud'], { depth: 3 });
  });
});
