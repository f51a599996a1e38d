import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/observe/logger.ts';
import { defineTool, ToolRegistry } from '../../src/protocol/index.ts';
import { definePack, type PackHandle, type ToolPack } from '../../src/protocol/pack.ts';
import type { Tool } from '../../src/protocol/types.ts';
import { checkToolSections, PackHost, packConfigSchemas } from '../../src/tools/host.ts';
import { BUILTIN_PACKS } from '../../src/tools/index.ts';
import { ensureLayout, resolveLayout } from '../../src/vault/index.ts';

const tool = (name: string): Tool =>
  defineTool({
    name,
    description: `The ${name} tool.`,
    parameters: {},
    safety: 'safe',
    handler: () => name,
  });

/** A pack whose tools change while it runs, like an MCP server's. */
function changingPack(): {
  pack: ToolPack;
  setTools: (names: string[]) => void;
  stopped: () => boolean;
} {
  let tools = [tool('live_one')];
  let listener: (() => void) | undefined;
  let stopped = false;
  const pack: ToolPack = {
    name: 'live',
    description: 'tools that change',
    enabledByDefault: false,
    configSchema: {
      type: 'object',
      properties: { servers: { type: 'integer', default: 1 } },
      additionalProperties: false,
    },
    start: (ctx): PackHandle => {
      assert.equal(ctx.config['servers'], 2, 'the section, validated, defaults applied');
      return {
        tools: () => tools,
        onChange: (l) => {
          listener = l;
          return () => (listener = undefined);
        },
        stop: async () => {
          stopped = true;
        },
      };
    },
  };
  return {
    pack,
    setTools: (names) => {
      tools = names.map(tool);
      listener?.();
    },
    stopped: () => stopped,
  };
}

describe('PackHost', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-host-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts enabled packs, follows their tool changes, gives each tool its pack config and limits, and stops them', async () => {
    const live = changingPack();
    const quiet = definePack({
      name: 'quiet',
      description: 'off',
      tools: [tool('quiet_one')],
      enabledByDefault: false,
    });
    const packs = [...BUILTIN_PACKS, live.pack, quiet];
    const config = loadConfig({
      vault: dir,
      toolSchemas: packConfigSchemas(packs),
      env: {},
    });
    const withSections = {
      ...config,
      tools: {
        live: { enabled: true, servers: 2, limits: { live_two: { timeout_ms: 1234 } } },
        search_web: { rate_limit: { max: 2, window_ms: 1000 } },
      },
    };
    const layout = resolveLayout(withSections);
    await ensureLayout(layout);
    const registry = new ToolRegistry();
    const changes: string[][] = [];
    registry.onChange((c) => changes.push([...c.added, ...c.removed.map((r) => `-${r}`)]));
    const host = new PackHost({
      packs,
      config: withSections,
      layout,
      registry,
      logger: silentLogger(),
    });
    await host.start();
    assert.deepEqual(registry.names(), ['live_one', 'search_web', 'send_notification']);
    assert.equal(registry.get('live_one')?.pack, 'live');
    assert.equal(
      host.runtime(registry.get('search_web') as Tool)?.rateLimit?.max,
      2,
      'an older key still configures its pack',
    );
    live.setTools(['live_two']);
    assert.deepEqual(registry.names(), ['live_two', 'search_web', 'send_notification']);
    assert.deepEqual(changes.at(-1), ['live_two', '-live_one']);
    const runtime = host.runtime(registry.get('live_two') as Tool);
    assert.equal(runtime?.timeoutMs, 1234);
    assert.equal(runtime?.config['servers'], 2);
    assert.deepEqual(
      runtime?.files?.roots.map((r) => r.name),
      ['vault'],
    );
    assert.deepEqual(
      host.describe().map((p) => [p.name, p.enabled]),
      [
        ['web', true],
        ['notify', true],
        ['mcp', true],
        ['commands', true],
        ['git', false],
        ['filesystem', false],
        ['lsp', false],
        ['shell', false],
        ['live', true],
        ['quiet', false],
      ],
    );
    await host.stop();
    assert.equal(live.stopped(), true);
    assert.deepEqual(registry.names(), []);
  });

  it('gives every pack its new section on SIGHUP though one fails to take it, and that one again at the next (review finding)', async () => {
    // The host took the new config before the packs did: a pack whose reload threw stopped the
    // packs after it, and the next SIGHUP of the same file saw no change for any of them.
    const taken: Record<string, unknown[]> = { first: [], second: [] };
    let failing = true;
    const reloading = (name: string): ToolPack => ({
      name,
      description: name,
      configSchema: { type: 'object', properties: { level: { type: 'integer' } } },
      start: (): PackHandle => ({
        tools: () => [tool(`${name}_tool`)],
        stop: async () => undefined,
        reload: async (section) => {
          if (name === 'first' && failing) throw new Error('first cannot take it yet');
          taken[name]?.push(section['level']);
        },
      }),
    });
    const packs = [reloading('first'), reloading('second')];
    const configWith = (level: number) => {
      const config = loadConfig({ vault: dir, env: {}, toolSchemas: packConfigSchemas(packs) });
      return { ...config, tools: { first: { level }, second: { level } } };
    };
    const layout = resolveLayout(configWith(1));
    await ensureLayout(layout);
    const host = new PackHost({
      packs,
      config: configWith(1),
      layout,
      registry: new ToolRegistry(),
      logger: silentLogger(),
    });
    await host.start();
    try {
      assert.deepEqual(await host.reload(configWith(2)), []);
      assert.deepEqual(taken, { first: [], second: [2] });
      failing = false;
      await host.reload(configWith(2));
      assert.deepEqual(taken, { first: [2], second: [2] });
    } finally {
      await host.stop();
    }
  });

  it("checks a plugin pack's schemas: a bad one stops the start, later it is left out", async () => {
    const bad = defineTool({
      name: 'bad_schema',
      description: 'a schema Ajv cannot compile',
      parameters: { q: { type: 'string', minLength: 'three' as unknown as number } },
      safety: 'safe',
      handler: () => 'never',
    });
    let tools: Tool[] = [tool('plug_one')];
    let listener: (() => void) | undefined;
    const pack: ToolPack = {
      name: 'plug',
      description: 'a plugin pack',
      start: (): PackHandle => ({
        tools: () => tools,
        onChange: (l) => {
          listener = l;
          return () => (listener = undefined);
        },
        stop: async () => undefined,
      }),
    };
    const config = loadConfig({ vault: dir, env: {}, toolSchemas: packConfigSchemas([pack]) });
    const layout = resolveLayout(config);
    await ensureLayout(layout);
    const start = async (): Promise<{ host: PackHost; registry: ToolRegistry }> => {
      const registry = new ToolRegistry();
      const host = new PackHost({
        packs: [pack],
        config,
        layout,
        registry,
        logger: silentLogger(),
      });
      await host.start();
      return { host, registry };
    };
    tools = [tool('plug_one'), bad];
    await assert.rejects(start(), /parameter 'q' has a schema Ajv cannot compile/);
    tools = [tool('plug_one')];
    const { host, registry } = await start();
    tools = [tool('plug_two'), bad];
    listener?.();
    assert.deepEqual(registry.names(), ['plug_two']);
    await host.stop();
  });

  it('names config sections that no pack owns, or one pack twice', () => {
    const config = loadConfig({ vault: dir, env: {} });
    const problems = checkToolSections(
      { ...config, tools: { serch_web: {}, web: {}, search_web: {} } },
      BUILTIN_PACKS,
    );
    assert.equal(problems.length, 2);
    assert.match(
      problems[0] ?? '',
      /'tools\.serch_web' names no tool pack; the packs are: web, notify/,
    );
    assert.match(problems[1] ?? '', /'tools\.web' and 'tools\.search_web' configure the same pack/);
  });

  const configFile = (text: string): string => {
    const file = join(dir, 'safety-key.yaml');
    writeFileSync(file, text);
    return file;
  };

  it('refuses a safety key in the web and notify sections, which no code reads (docs walk)', () => {
    for (const [key, value] of [
      ['search_web', 'banana'],
      ['send_notification', 'safe'],
      ['web', 'safe'],
      ['notify', 'safe'],
    ] as const) {
      assert.throws(
        () =>
          loadConfig({
            file: configFile(`vault: .\ntools: {${key}: {safety: ${value}}}\n`),
            env: {},
            toolSchemas: packConfigSchemas(BUILTIN_PACKS),
          }),
        new RegExp(`unknown config key 'tools\\.${key}\\.safety'`),
        key,
      );
    }
  });
});
