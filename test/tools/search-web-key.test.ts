import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { PackContext, PackHandle } from '../../src/protocol/pack.ts';
import { findMissingApiKey } from '../../src/tools/search-web/key-check.ts';
import { webPack } from '../../src/tools/search-web/pack.ts';

describe('search_web API key variable checked at start', () => {
  const cases: {
    name: string;
    section: Record<string, unknown>;
    env: NodeJS.ProcessEnv;
    variable?: string;
    key?: string;
  }[] = [
    { name: 'the default provider needs no key', section: {}, env: {} },
    { name: 'SearXNG needs no key', section: { provider: 'searxng', url: 'http://s' }, env: {} },
    {
      name: 'Brave without its default variable',
      section: { provider: 'brave' },
      env: {},
      variable: 'BRAVE_API_KEY',
    },
    { name: 'Brave with it set', section: { provider: 'brave' }, env: { BRAVE_API_KEY: 'k' } },
    {
      name: 'Tavily with the variable api_key_env names unset',
      section: { provider: 'tavily', api_key_env: 'MY_TAVILY' },
      env: { TAVILY_API_KEY: 'the default is not read' },
      variable: 'MY_TAVILY',
      key: 'tools.search_web.api_key_env',
    },
    {
      name: 'a variable set to blanks counts as unset',
      section: { provider: 'tavily', api_key_env: 'MY_TAVILY' },
      env: { MY_TAVILY: '  ' },
      variable: 'MY_TAVILY',
      key: 'tools.search_web.api_key_env',
    },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.variable === undefined ? 'no warning' : `warns about ${c.variable}`}`, () => {
      const missing = findMissingApiKey(c.section, c.env);
      if (c.variable === undefined) return assert.equal(missing, undefined);
      assert.equal(missing?.variable, c.variable);
      assert.equal(missing.key, c.key);
      assert.ok(missing.message.includes(`environment variable ${c.variable}`), missing.message);
      assert.ok(missing.message.includes('tools.search_web.api_key_env'), missing.message);
    });
  }

  it('the web pack logs the warning at start and at a reload, and starts all the same', async () => {
    const variable = 'VAULTD_TEST_UNSET_SEARCH_KEY';
    delete process.env[variable];
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const ctx = {
      config: { provider: 'brave', api_key_env: variable },
      logger,
    } as unknown as PackContext;
    const handle: PackHandle = await webPack.start(ctx);
    assert.deepEqual(
      handle.tools().map((t) => t.name),
      ['search_web'],
    );
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.['level'], 40);
    assert.equal(lines[0]?.['variable'], variable);
    assert.equal(lines[0]?.['key'], 'tools.search_web.api_key_env');
    await handle.reload?.({ provider: 'duckduckgo' });
    assert.equal(lines.length, 1, 'no key needed: no warning');
    await handle.reload?.({ provider: 'tavily' });
    assert.equal(lines.length, process.env['TAVILY_API_KEY'] ? 1 : 2);
    await handle.stop();
  });
});
