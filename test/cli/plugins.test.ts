import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { describeLoadError } from '../../src/cli/plugins.ts';
import { callBlock, note, resultsOf, runCli } from '../helpers/vault.ts';

// The README's "Adding a tool" example, in TypeScript, plus a failure the tool reports itself.
const TS_PLUGIN = `import { defineTool, ToolError } from 'vaultd';

export const wordCount = defineTool<{ text: string; unique?: boolean }>({
  name: 'word_count',
  description: 'Count the words of a text. Returns {words}. Use it instead of counting yourself.',
  parameters: {
    text: { type: 'string', maxLength: 100_000, description: 'the text to count' },
    unique: { type: 'boolean', default: false, description: 'count distinct words only' },
  },
  required: ['text'],
  safety: 'safe',
  categories: ['text'],
  readOnly: true,
  handler(args, ctx) {
    if (ctx.signal.aborted) throw new ToolError('TIMEOUT', 'aborted');
    if (args.text === 'quota') throw new ToolError('RATE_LIMITED', 'no more counting today');
    const words: string[] = args.text.split(/\\s+/).filter(Boolean);
    return { words: args.unique ? new Set(words).size : words.length };
  },
});
`;

// Plain JavaScript, default export, and a helper module of its own next to it.
const JS_PLUGIN = `import { defineTool, ToolError } from 'vaultd';
import { shout } from './shout-helper.js';

export default defineTool({
  name: 'shout',
  description: 'Upper-case a text.',
  parameters: { text: { type: 'string', description: 'the text' } },
  required: ['text'],
  safety: 'safe',
  handler(args) {
    if (args.text === '') throw new ToolError('INVALID_PARAMS', 'nothing to shout');
    return shout(args.text);
  },
});
`;

describe('plugins in folders outside the checkout', () => {
  let dir: string;
  let vault: string;
  let config: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-plugins-'));
    // Two folders of their own, no package.json anywhere above them.
    await mkdir(join(dir, 'ts-tools'));
    await mkdir(join(dir, 'js-tools'));
    await writeFile(join(dir, 'ts-tools', 'word-count.ts'), TS_PLUGIN);
    await writeFile(join(dir, 'js-tools', 'shout.js'), JS_PLUGIN);
    await writeFile(
      join(dir, 'js-tools', 'shout-helper.js'),
      'export const shout = (text) => `${text.toUpperCase()}!`;\n',
    );
    vault = join(dir, 'vault');
    const init = await runCli(['init', vault]);
    assert.equal(init.code, 0, init.stderr);
    config = join(vault, 'vaultd.yaml');
    const text = await readFile(config, 'utf8');
    await writeFile(
      config,
      text.replace(
        /^plugins: \[\]$/m,
        'plugins: [../ts-tools/word-count.ts, ../js-tools/shout.js]',
      ),
    );
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // The bundle when it is fresh (as after npm ci), and the TypeScript sources.
  for (const [mode, env] of [
    ['as installed', {}],
    ['from the sources', { VAULTD_FROM_SOURCE: '1' }],
  ] as const) {
    it(`vaultd tools lists both plugins' tools (${mode})`, async () => {
      const res = await runCli(['tools', '--config', config], env, { cwd: dir });
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^ {2}word_count +safe +Count the words/m);
      assert.match(res.stdout, /^ {2}shout +safe +Upper-case a text\./m);
    });

    it(`once runs them, and a thrown ToolError keeps its code (${mode})`, async () => {
      const name = `n-${mode.replace(/\W/g, '')}.md`;
      await writeFile(
        join(vault, 'Needs_Action', name),
        note(
          'P',
          callBlock('word_count', { text: 'one two two', unique: true }, 'count'),
          callBlock('shout', { text: 'hi' }, 'loud'),
          callBlock('word_count', { text: 'quota' }, 'quota'),
          callBlock('shout', { text: '' }, 'empty'),
        ),
      );
      const res = await runCli(['once', '--config', config], env, { cwd: dir });
      assert.equal(res.code, 0, res.stderr);
      const results = resultsOf(await readFile(join(vault, 'Failed', name), 'utf8'));
      const byId = new Map(results.map((r) => [r.id, r]));
      assert.deepEqual(byId.get('count')?.data, { words: 2 });
      assert.match(byId.get('loud')?.content ?? '', /HI!/);
      assert.equal(byId.get('quota')?.error?.code, 'RATE_LIMITED');
      assert.equal(byId.get('empty')?.error?.code, 'INVALID_PARAMS');
    });
  }

  it('vaultd init DIR on the vault keeps its vaultd.yaml and lists its plugins’ tools in TOOLS.md', async () => {
    const before = await readFile(config, 'utf8');
    // From a folder without a config of its own: only the vault's vaultd.yaml names the plugins.
    const res = await runCli(['init', vault], {}, { cwd: dir });
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /kept .*vaultd\.yaml \(already there\)/);
    assert.equal(await readFile(config, 'utf8'), before);
    const tools = await readFile(join(vault, 'TOOLS.md'), 'utf8');
    assert.match(tools, /^## word_count$/m);
    assert.match(tools, /^## shout$/m);
    assert.match(tools, /^## search_web$/m);
  });

  it('vaultd check knows the plugins’ tools', async () => {
    const path = join(dir, 'draft.md');
    await writeFile(
      path,
      note('D', callBlock('word_count', { text: 'a b' }), callBlock('shout', { text: 1 })),
    );
    const res = await runCli(['check', '--config', config, path], {}, { cwd: dir });
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stdout, /draft\.md:6:1: ok WOULD_RUN word_count/);
    assert.match(res.stdout, /draft\.md:10:1: error INVALID_PARAMS .*text/);
  });

  it('a plugin that cannot be loaded stops the start with exit 2, naming it', async () => {
    await writeFile(
      join(dir, 'ts-tools', 'broken.ts'),
      "import { nope } from './missing.ts';\nexport const tools = [nope];\n",
    );
    await writeFile(join(dir, 'ts-tools', 'empty.js'), 'export const answer = 42;\n');
    // A syntax error: esbuild's place (file:line:column) and text come after its first line.
    await writeFile(
      join(dir, 'ts-tools', 'syntax.ts'),
      "import { defineTool } from 'vaultd';\nexport const t = defineTool({ name: 'x', safety: 'safe' handler() { return 1; } });\n",
    );
    for (const [plugin, why] of [
      ['../ts-tools/broken.ts', /could not be loaded: .*missing\.ts/],
      [
        '../ts-tools/syntax.ts',
        /could not be loaded: Transform failed with 1 error: \S*\/ts-tools\/syntax\.ts:2:56: ERROR: Expected "\}" but found "handler"$/m,
      ],
      ['../ts-tools/empty.js', /exports no tool pack and no tool made with defineTool/],
    ] as const) {
      const bad = join(vault, `bad-${plugin.length}.yaml`);
      await writeFile(bad, `vault: .\nplugins: [${plugin}]\n`);
      for (const command of ['run', 'tools']) {
        const res = await runCli([command, '--config', bad], {}, { cwd: dir });
        assert.equal(res.code, 2, `${command}: ${res.stderr}`);
        const file = plugin.slice(3).replace(/\./g, '\\.');
        assert.match(res.stderr, new RegExp(`^vaultd: plugin "${dir}/${file}"`));
        assert.match(res.stderr, why);
        assert.equal(res.stderr.trimEnd().split('\n').length, 1, res.stderr);
      }
    }
  });
});

describe('describeLoadError', () => {
  it('keeps every line of the message, on one line, cut at 600 characters', () => {
    const esbuild = new Error(
      'Transform failed with 2 errors:\n/p/bad.ts:2:96: ERROR: Expected "}" but found "handler"\n/p/bad.ts:5:1: ERROR: Unexpected end of file',
    );
    assert.equal(
      describeLoadError(esbuild),
      'Transform failed with 2 errors: /p/bad.ts:2:96: ERROR: Expected "}" but found "handler" /p/bad.ts:5:1: ERROR: Unexpected end of file',
    );
    const long = describeLoadError(new Error(`first line\n${'x'.repeat(5000)}`));
    assert.equal(long.length, 600);
    assert.match(long, /^first line x+…$/);
    assert.equal(describeLoadError('a string'), 'a string');
  });
});
