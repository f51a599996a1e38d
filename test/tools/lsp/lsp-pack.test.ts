// The lsp pack against the real typescript-language-server on a small fixture project, through
// the pack host and the executor; and against servers that crash, hang, are missing or misbehave.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import {
  chmod,
  link,
  mkdir,
  mkdtemp,
  readFile,
  realpath,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { renderResult } from '../../../src/note/render-result.ts';
import type { ToolResult } from '../../../src/protocol/types.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import {
  columnOf,
  copyProject,
  FIXTURES,
  processesIn,
  startLspHost,
  writeFiles,
  type LspHost,
} from './helpers.ts';

interface Place {
  path: string;
  line: number;
  column: number;
  text: string;
}
interface Problem extends Place {
  severity: string;
  code: string | null;
  message: string;
}
interface DiagnosticsData {
  counts: Record<string, number>;
  files: { path: string; answered: boolean; problems: number }[];
  places: Problem[];
}

function ok(result: ToolResult): ToolResult {
  assert.equal(result.success, true, `${result.name}: ${result.content}`);
  return result;
}

describe('lsp pack with typescript-language-server', { timeout: 120_000 }, () => {
  let base: string;
  let vault: string;
  let lsp: LspHost;
  let marker: string;
  let unicodeLines: string[];

  before(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-')));
    vault = join(base, 'vault');
    await mkdir(vault, { recursive: true });
    await copyProject(join(vault, 'code'));
    unicodeLines = (await readFile(join(vault, 'code/src/unicode.ts'), 'utf8')).split('\n');
    // A TypeScript an agent planted in the workspace: typescript-language-server would run it.
    marker = join(base, 'planted-tsserver-ran');
    await writeFiles(join(vault, 'code/node_modules/typescript'), {
      'package.json': JSON.stringify({ name: 'typescript', version: '9.9.9' }),
      'lib/tsserver.js': `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran');`,
    });
    await writeFiles(base, { 'outside/secret.ts': 'export const secret = "s3cret";\n' });
    await symlink(join(base, 'outside/secret.ts'), join(vault, 'code/src/leak.ts'));
    await writeFile(join(vault, 'notes.md'), '# Notes\n');
    // Outside the sandbox, so that the planted TypeScript could leave its marker if it ran.
    lsp = await startLspHost(base, { servers: { typescript: { sandbox: false } } });
  });

  after(async () => {
    await lsp?.host.stop();
    await rm(base, { recursive: true, force: true });
  });

  it('finds a type error with file:line:column, severity, code and the source line', async () => {
    const result = ok(await lsp.call('diagnostics', { path: 'code/src/main.ts' }));
    const data = result.data as DiagnosticsData;
    const [problem, ...rest] = data.places;
    assert.equal(rest.length, 0, result.content);
    assert.equal(problem?.path, 'code/src/main.ts');
    assert.deepEqual([problem?.line, problem?.column], [4, 14]);
    assert.equal(problem?.severity, 'error');
    assert.equal(problem?.code, '2322');
    assert.match(problem?.message ?? '', /Type 'string' is not assignable to type 'number'/);
    assert.equal(problem?.text, "export const label: number = 'not a number';");
    assert.match(result.content, /^1 error, 0 warnings in code\/src\/main\.ts/);
    assert.match(result.content, /code\/src\/main\.ts:4:14: error typescript 2322: Type 'string'/);
    assert.equal(existsSync(marker), false, 'the workspace’s own TypeScript never ran');
  });

  it('reflects the file as it is on disk at each call', async () => {
    const file = join(vault, 'code/src/main.ts');
    const original = await readFile(file, 'utf8');
    try {
      await writeFile(file, original.replace("'not a number'", '42'));
      const fixed = ok(await lsp.call('diagnostics', { path: 'code/src/main.ts' }));
      assert.deepEqual((fixed.data as DiagnosticsData).counts.error, 0, fixed.content);
    } finally {
      await writeFile(file, original);
    }
    const again = ok(await lsp.call('diagnostics', { path: 'code/src/main.ts' }));
    assert.equal((again.data as DiagnosticsData).counts.error, 1, again.content);
  });

  it('checks every source file of a folder, placing errors after emoji in characters', async () => {
    const result = ok(await lsp.call('diagnostics', { path: 'code/src' }));
    const data = result.data as DiagnosticsData;
    assert.deepEqual(
      data.files.map((f) => f.path),
      ['code/src/main.ts', 'code/src/unicode.ts', 'code/src/util.ts'],
      'the link out of the vault is not looked at',
    );
    const unicode = data.places.filter((p) => p.path === 'code/src/unicode.ts');
    assert.equal(unicode.length, 1, result.content);
    const line = unicodeLines[3] ?? '';
    assert.deepEqual([unicode[0]?.line, unicode[0]?.column], [4, columnOf(line, 'bad:')]);
    assert.equal(data.counts.error, 2);
  });

  it('gives the type and documentation on hover, after emoji and accented letters', async () => {
    const result = ok(
      await lsp.call('hover', {
        path: 'code/src/main.ts',
        line: 3,
        column: columnOf('export const total: number = add(1, 2);', 'add'),
      }),
    );
    assert.match(result.content, /add\(a: number, b: number\): number/);
    assert.match(result.content, /Adds two numbers/);
    const line = unicodeLines[2] ?? '';
    const column = columnOf(line, 'add(');
    assert.notEqual(
      column - 1,
      line.indexOf('add('),
      'the line has characters of two UTF-16 units',
    );
    const unicode = ok(await lsp.call('hover', { path: 'code/src/unicode.ts', line: 3, column }));
    assert.match(unicode.content, /add\(a: number, b: number\): number/);
    const cafe = ok(
      await lsp.call('hover', {
        path: 'code/src/unicode.ts',
        line: 3,
        column: columnOf(line, 'café'),
      }),
    );
    assert.match(cafe.content, /const café: number/);
  });

  it('finds a definition in another file, with its line of source', async () => {
    const line = unicodeLines[3] ?? '';
    const result = ok(
      await lsp.call('definition', { path: 'code/src/main.ts', line: 3, column: 30 }),
    );
    const locations = (result.data as { places: Place[] }).places;
    assert.deepEqual(locations, [
      {
        path: 'code/src/util.ts',
        line: 2,
        column: 17,
        end_line: 2,
        end_column: 20,
        text: 'export function add(a: number, b: number): number {',
      },
    ]);
    assert.match(result.content, /code\/src\/util\.ts:2:17\n {4}2 \| export function add/);
    assert.match(
      renderResult(result),
      /^> - \[\[code\/src\/util\.ts\|code\/src\/util\.ts:2:17\]\]\n> {3}export function add/m,
      'a link Obsidian opens, in the note',
    );
    const cafe = ok(
      await lsp.call('definition', {
        path: 'code/src/unicode.ts',
        line: 4,
        column: columnOf(line, 'café'),
      }),
    );
    const [target] = (cafe.data as { places: Place[] }).places;
    assert.deepEqual(
      [target?.line, target?.column],
      [3, columnOf(unicodeLines[2] ?? '', 'café')],
      'a place after emoji, converted back to characters',
    );
  });

  it('lists references across files, with or without the declaration', async () => {
    const all = ok(await lsp.call('references', { path: 'code/src/util.ts', line: 2, column: 17 }));
    const places = (all.data as { places: Place[] }).places.map(
      (p) => `${p.path}:${p.line}:${p.column}`,
    );
    const unicodeAdd = `code/src/unicode.ts:3:${columnOf(unicodeLines[2] ?? '', 'add(')}`;
    for (const expected of ['code/src/util.ts:2:17', 'code/src/main.ts:3:30', unicodeAdd]) {
      assert.ok(places.includes(expected), `${expected} in ${places.join(', ')}`);
    }
    const uses = ok(
      await lsp.call('references', {
        path: 'code/src/util.ts',
        line: 2,
        column: 17,
        include_declaration: false,
      }),
    );
    const usePlaces = (uses.data as { places: Place[] }).places.map((p) => p.path);
    assert.equal(usePlaces.includes('code/src/util.ts'), false, uses.content);
    assert.ok(usePlaces.length >= 2, uses.content);
  });

  it('lists a file’s symbols with their containers, and finds symbols across the workspace', async () => {
    const doc = ok(await lsp.call('symbols', { path: 'code/src/util.ts' }));
    const symbols = (
      doc.data as {
        places: { name: string; kind: string; container: string | null; line: number }[];
      }
    ).places;
    const brief = symbols.map((s) => `${s.kind} ${s.name} ${s.container ?? '-'} ${s.line}`);
    for (const expected of [
      'function add - 2',
      'class Counter - 7',
      'property count Counter 8',
      'method increment Counter 10',
    ]) {
      assert.ok(brief.includes(expected), `${expected} in ${brief.join(', ')}`);
    }
    const found = ok(await lsp.call('symbols', { path: 'code', query: 'Counter' }));
    const hits = (found.data as { places: { name: string; path: string; line: number }[] }).places;
    assert.ok(
      hits.some((s) => s.name === 'Counter' && s.path === 'code/src/util.ts' && s.line === 7),
      found.content,
    );
    assert.match(found.content, /class Counter \(code\/src\/util\.ts:7:\d+\)/);
    const viaFile = ok(await lsp.call('symbols', { path: 'code/src/main.ts', query: 'Counter' }));
    assert.match(
      viaFile.content,
      /class Counter \(code\/src\/util\.ts:7:\d+\)/,
      'a file stands for its workspace',
    );
  });

  it('shares one server per workspace root between calls', async () => {
    const root = join(vault, 'code');
    const servers = (await processesIn(root)).filter(
      (p) =>
        p.cmdline.startsWith(process.execPath) && p.cmdline.includes('typescript-language-server'),
    );
    assert.equal(servers.length, 1, servers.map((s) => s.cmdline).join('\n'));
  });

  it('refuses paths outside the roots, links out of them, vaultd’s state and unknown file types', async () => {
    for (const path of [
      '../outside/secret.ts',
      join(base, 'outside/secret.ts'),
      'code/src/leak.ts',
      '/etc/passwd',
    ]) {
      const result = await lsp.call('hover', { path, line: 1, column: 1 });
      assert.equal(result.error?.code, 'PERMISSION_DENIED', `${path}: ${result.content}`);
    }
    const state = await lsp.call('diagnostics', { path: '.vaultd' });
    assert.equal(state.error?.code, 'PERMISSION_DENIED', state.content);
    const md = await lsp.call('diagnostics', { path: 'notes.md' });
    assert.equal(md.error?.code, 'INVALID_PARAMS');
    assert.match(md.error?.message ?? '', /no language server is configured for notes\.md/);
    const far = await lsp.call('hover', { path: 'code/src/util.ts', line: 99, column: 1 });
    assert.equal(far.error?.code, 'INVALID_PARAMS');
    assert.match(far.error?.message ?? '', /line 99 is outside the file/);
    const flag = await lsp.call('hover', { path: '--help', line: 1, column: 1 });
    assert.equal(flag.error?.code, 'INVALID_PARAMS', 'a path, never an option');
  });

  it('runs typescript-language-server in the bubblewrap sandbox by default', async () => {
    await copyProject(join(vault, 'boxed'));
    const boxed = await startLspHost(base, {});
    try {
      const result = ok(await boxed.call('diagnostics', { path: 'boxed/src/main.ts' }));
      assert.equal((result.data as DiagnosticsData).counts.error, 1, result.content);
      const tree = await processesIn(join(vault, 'boxed'));
      assert.ok(
        tree.some(
          (p) => p.cmdline.startsWith('/usr/bin/bwrap') && p.cmdline.includes('--unshare-all'),
        ),
        tree.map((p) => p.cmdline).join('\n'),
      );
    } finally {
      await boxed.host.stop();
    }
  });

  it('shows a sandboxed server only the system, itself and the roots: an import from elsewhere is not read', async () => {
    // Another user's project or a secrets file, outside every root and outside /tmp (which the
    // sandbox has always replaced), readable by the server's user.
    const elsewhere = await mkdtemp('/var/tmp/vaultd-lsp-elsewhere-');
    try {
      await chmod(elsewhere, 0o755);
      await writeFile(
        join(elsewhere, 'creds.ts'),
        'export const API_KEY = "sk-live-elsewhere-4242";\n',
      );
      await chmod(join(elsewhere, 'creds.ts'), 0o644);
      await copyProject(join(vault, 'importer'));
      await writeFile(
        join(vault, 'importer/src/main.ts'),
        `import { API_KEY } from '${elsewhere}/creds.js';\nexport const n: 'x' = API_KEY;\n`,
      );
      const boxed = await startLspHost(base, {});
      try {
        const result = ok(await boxed.call('diagnostics', { path: 'importer/src/main.ts' }));
        assert.doesNotMatch(JSON.stringify(result), /sk-live-elsewhere-4242/);
        assert.match(result.content, /Cannot find module/, result.content);
      } finally {
        await boxed.host.stop();
      }
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('kills its servers, whole process groups, when the pack stops', async () => {
    const root = join(vault, 'code');
    assert.ok((await processesIn(root)).length > 0, 'a server runs before the stop');
    await lsp.host.stop();
    await waitFor(async () => (await processesIn(base)).length === 0, {
      message: 'no process left in the vault',
      timeoutMs: 10_000,
    });
    assert.equal(existsSync(marker), false);
  });
});

describe(
  'lsp pack with servers that crash, hang, are missing or misbehave',
  { timeout: 60_000 },
  () => {
    let base: string;
    let lsp: LspHost;
    const node = process.execPath;

    before(async () => {
      base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-lsp-bad-')));
      await writeFiles(join(base, 'ext'), { 'lib/z.mini': '😀 WARN\n' });
      await writeFiles(join(base, 'vault'), {
        'a.crash': 'x\n',
        'a.hang': 'x\n',
        'a.ghost': 'x\n',
        'ok.mini': 'fine\n',
        'pull/warn.mini': 'fine\n😀 WARN here\n',
        'crash.mini': 'CRASH\n',
        'huge.mini': 'HUGE\n',
        'idle/package.json': '{}',
        'idle/x.mini': 'fine\n',
        'projects/one/package.json': '{}',
        'projects/one/a.mini': 'SYMBOL\n',
        'projects/two/package.json': '{}',
        'projects/two/b.mini': 'SYMBOL\n',
        'many/package.json': '{}',
        'box/package.json': '{}',
        'box/w.boxed': 'WRITE\n',
        'box/caps.boxed': 'CAPS\n',
        'free/package.json': '{}',
        'free/w.mini': 'WRITE\n',
        'many/a.mini': 'WARN\n',
        'many/b.mini': 'WARN\n',
        'many/c.mini': 'WARN\n',
        'linked/package.json': '{}',
        'linked/own.mini': 'WARN fine\n',
      });
      // A hard link in the vault to a file outside every root (the red team's secret.env).
      await writeFiles(join(base, 'outside'), { 'secret.env': 'WARN hunter2-outside\n' });
      await link(join(base, 'outside/secret.env'), join(base, 'vault/linked/leak.mini'));
      lsp = await startLspHost(
        base,
        {
          start_timeout_ms: 1500,
          max_files: 2,
          roots: [{ name: 'ext', path: join(base, 'ext') }],
          request_timeout_ms: 3000,
          idle_shutdown_ms: 400,
          servers: {
            crashy: {
              command: node,
              args: [join(FIXTURES, 'crash-server.mjs')],
              extensions: ['.crash'],
            },
            hangs: {
              command: node,
              args: [join(FIXTURES, 'hang-server.mjs')],
              extensions: ['.hang'],
            },
            ghost: { command: 'vaultd-no-such-language-server', extensions: ['.ghost'] },
            boxed: {
              command: node,
              args: [join(FIXTURES, 'mini-server.mjs')],
              extensions: ['.boxed'],
              root_markers: ['package.json'],
              sandbox: true,
            },
            mini: {
              command: node,
              args: [join(FIXTURES, 'mini-server.mjs')],
              extensions: ['.mini'],
              root_markers: ['package.json'],
            },
          },
        },
        10_000,
      );
    });

    after(async () => {
      await lsp?.host.stop();
      await rm(base, { recursive: true, force: true });
    });

    it('reports a server that dies at once with its exit and last words, then backs off', async () => {
      const first = await lsp.call('hover', { path: 'a.crash', line: 1, column: 1 });
      assert.equal(first.error?.code, 'EXECUTION_FAILED');
      assert.match(first.error?.message ?? '', /crashy language server .* could not start/);
      assert.match(first.error?.message ?? '', /exit code 3/);
      assert.match(first.error?.message ?? '', /giving up/);
      const second = await lsp.call('hover', { path: 'a.crash', line: 1, column: 1 });
      assert.equal(second.error?.code, 'EXECUTION_FAILED');
      assert.match(second.error?.message ?? '', /started again in \d+ s/);
      assert.equal(second.error?.recoverable, true);
    });

    it('gives up on a server that never answers initialize, and kills it', async () => {
      const result = await lsp.call('hover', { path: 'a.hang', line: 1, column: 1 });
      assert.equal(result.error?.code, 'EXECUTION_FAILED');
      assert.match(result.error?.message ?? '', /no answer to initialize within 1500 ms/);
      await waitFor(
        async () => !(await processesIn(base)).some((p) => p.cmdline.includes('hang-server')),
        {
          message: 'the hung server was killed',
        },
      );
    });

    it('ends the call at its own timeout when a server is slower to start than the call may take', async () => {
      const slow = await startLspHost(base, {
        start_timeout_ms: 60_000,
        limits: { hover: { timeout_ms: 800 } },
        servers: {
          hangs: {
            command: node,
            args: [join(FIXTURES, 'hang-server.mjs')],
            extensions: ['.hang'],
          },
        },
      });
      try {
        const result = await slow.call('hover', { path: 'a.hang', line: 1, column: 1 });
        assert.equal(result.error?.code, 'TIMEOUT', result.content);
      } finally {
        await slow.host.stop();
      }
      await waitFor(
        async () => !(await processesIn(base)).some((p) => p.cmdline.includes('hang-server')),
        {
          message: 'the stop killed the starting server',
        },
      );
    });

    it('says which program is missing', async () => {
      const result = await lsp.call('symbols', { path: 'a.ghost' });
      assert.equal(result.error?.code, 'EXECUTION_FAILED');
      assert.match(result.error?.message ?? '', /vaultd-no-such-language-server is not installed/);
      assert.equal(result.error?.recoverable, false);
    });

    it('reports a crash in the middle of a call, and starts the server again after the backoff', async () => {
      ok(await lsp.call('hover', { path: 'ok.mini', line: 1, column: 1 }));
      const crashed = await lsp.call('hover', { path: 'crash.mini', line: 1, column: 1 });
      assert.equal(crashed.error?.code, 'EXECUTION_FAILED');
      assert.match(crashed.error?.message ?? '', /exit code 5/);
      assert.match(crashed.error?.message ?? '', /crashing on purpose/);
      const back = await waitFor(
        async () => {
          const r = await lsp.call('hover', { path: 'ok.mini', line: 1, column: 1 });
          if (!r.success) assert.match(r.error?.message ?? '', /started again in/);
          return r.success ? r : undefined;
        },
        { message: 'the server started again', timeoutMs: 10_000, intervalMs: 200 },
      );
      assert.match(back.content, /mini hover/);
    });

    it('pulls diagnostics from a server that offers them, placed in characters', async () => {
      const result = ok(await lsp.call('diagnostics', { path: 'pull' }));
      const data = result.data as DiagnosticsData;
      assert.deepEqual(
        data.places.map((p) => [p.path, p.line, p.column, p.severity, p.code]),
        [['pull/warn.mini', 2, 3, 'warning', 'W1']],
      );
      assert.match(result.content, /^0 errors, 1 warning in 1 file in pull/);
      assert.match(
        result.content,
        /pull\/warn\.mini:2:3: warning mini W1: a warning\n {4}2 \| 😀 WARN here/,
      );
    });

    it('drops a server that announces a message over the cap', async () => {
      const result = await lsp.call('hover', { path: 'huge.mini', line: 1, column: 1 });
      assert.equal(result.error?.code, 'EXECUTION_FAILED');
      assert.match(result.error?.message ?? '', /over the \d+-byte cap/);
    });

    it('reads a configured extra root by absolute path, and caps a folder at max_files', async () => {
      const file = join(base, 'ext/lib/z.mini');
      const ext = ok(await lsp.call('diagnostics', { path: file }));
      const [place] = (ext.data as DiagnosticsData).places;
      assert.deepEqual([place?.path, place?.line, place?.column], [file, 1, 3]);
      const many = ok(await lsp.call('diagnostics', { path: 'many' }));
      const data = many.data as DiagnosticsData & { more_files: boolean };
      assert.deepEqual(
        data.files.map((f) => f.path),
        ['many/a.mini', 'many/b.mini'],
      );
      assert.equal(data.more_files, true);
      assert.match(many.content, /More files are in the folder than were looked at/);
    });

    it('runs a sandboxed server where it cannot write, even in its own workspace', async () => {
      const free = ok(await lsp.call('hover', { path: 'free/w.mini', line: 1, column: 1 }));
      assert.match(free.content, /wrote/, 'without the sandbox the write happens');
      assert.equal(existsSync(join(base, 'vault/free/written-by-server')), true);
      const boxed = ok(await lsp.call('hover', { path: 'box/w.boxed', line: 1, column: 1 }));
      assert.match(boxed.content, /write failed: EROFS/);
      assert.equal(existsSync(join(base, 'vault/box/written-by-server')), false);
    });

    it('refuses a file with other hard links, as the filesystem pack, and skips it in a folder', async () => {
      for (const tool of ['diagnostics', 'hover'] as const) {
        const args = tool === 'hover' ? { line: 1, column: 1 } : {};
        const result = await lsp.call(tool, { path: 'linked/leak.mini', ...args });
        assert.equal(result.error?.code, 'PERMISSION_DENIED', `${tool}: ${result.content}`);
        assert.match(
          result.error?.message ?? '',
          /has 1 other hard link\(s\), which may be outside/,
        );
        assert.doesNotMatch(JSON.stringify(result), /hunter2/);
      }
      const folder = ok(await lsp.call('diagnostics', { path: 'linked' }));
      assert.deepEqual(
        (folder.data as DiagnosticsData).files.map((f) => f.path),
        ['linked/own.mini'],
      );
      assert.doesNotMatch(JSON.stringify(folder), /hunter2/);
    });

    it('runs a sandboxed server with no capabilities, as run_as when vaultd is root', async () => {
      const boxed = ok(await lsp.call('hover', { path: 'box/caps.boxed', line: 1, column: 1 }));
      assert.match(boxed.content, /CapEff:\s+0+\b/, boxed.content);
      const uid = process.getuid?.() === 0 ? 65_534 : process.getuid?.();
      assert.match(boxed.content, new RegExp(`uid ${String(uid)}\\b`), boxed.content);
      assert.doesNotMatch(boxed.content, /remounted/);
    });

    it('searches symbols in every workspace of a folder', async () => {
      const result = ok(await lsp.call('symbols', { path: 'projects', query: 'SYMBOL' }));
      assert.deepEqual(
        (result.data as { places: { path: string }[] }).places.map((p) => p.path).sort(),
        ['projects/one/a.mini', 'projects/two/b.mini'],
      );
    });

    it('stops a server left idle', async () => {
      ok(await lsp.call('hover', { path: 'idle/x.mini', line: 1, column: 1 }));
      const idleRoot = join(base, 'vault/idle');
      assert.equal((await processesIn(idleRoot)).length, 1, 'started in its workspace root');
      await waitFor(async () => (await processesIn(idleRoot)).length === 0, {
        message: 'the idle server stopped',
        timeoutMs: 10_000,
      });
    });
  },
);
