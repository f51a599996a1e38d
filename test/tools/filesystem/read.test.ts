/* eslint-disable @typescript-eslint/no-explicit-any -- results carry JSON data of many shapes */
// The read tools of the filesystem pack on a temp vault: read_file, list_directory,
// search_files, file_info.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileInfo, listDirectory } from '../../../src/tools/filesystem/browse.ts';
import { copyFile } from '../../../src/tools/filesystem/change.ts';
import { readFile } from '../../../src/tools/filesystem/read-file.ts';
import { searchFiles } from '../../../src/tools/filesystem/search.ts';
import { makeSandbox, refused, type FsSandbox } from './helpers.ts';

describe('read_file', () => {
  let box: FsSandbox;
  before(async () => {
    box = await makeSandbox({ max_read_bytes: 2048 });
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n');
    await writeFile(join(box.vault, 'Notes', 'ten.md'), `${lines}\n`);
    await writeFile(join(box.vault, 'Notes', 'crlf.md'), 'one\r\ntwo\r\n');
    await writeFile(
      join(box.vault, 'Notes', 'image.png'),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1]),
    );
    await writeFile(
      join(box.vault, 'Notes', 'latin1.txt'),
      Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]),
    );
    await writeFile(join(box.vault, 'Notes', 'huge.txt'), `${'x'.repeat(100)}\n`.repeat(5000));
    await writeFile(join(box.vault, 'Notes', 'one-line.txt'), 'y'.repeat(5000));
  });
  after(() => box.cleanup());

  it('reads a whole file with its line count', async () => {
    const { content, data } = await box.call(readFile, { path: 'Notes/ten.md' });
    assert.equal(content, `${Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n')}\n`);
    assert.equal(data.total_lines, 10);
    assert.equal(data.truncated, false);
    assert.equal(data.path, 'Notes/ten.md');
  });

  it('reads a line range, the first lines and the last lines', async () => {
    assert.equal(
      (await box.call(readFile, { path: 'Notes/ten.md', start_line: 3, end_line: 5 })).content,
      'line 3\nline 4\nline 5',
    );
    assert.equal(
      (await box.call(readFile, { path: 'Notes/ten.md', end_line: 2 })).content,
      'line 1\nline 2',
    );
    const tail = await box.call(readFile, { path: 'Notes/ten.md', tail: 2 });
    assert.equal(tail.content, 'line 9\nline 10');
    assert.equal(tail.data.start_line, 9);
    assert.equal(tail.data.end_line, 10);
    assert.equal((await box.call(readFile, { path: 'Notes/crlf.md' })).content, 'one\r\ntwo\r\n');
  });

  it('says when start_line is past the end, so the empty answer does not read as an empty file', async () => {
    const past = await box.call(readFile, { path: 'Notes/ten.md', start_line: 99 });
    assert.equal(past.content, '[… Notes/ten.md has 10 lines: start_line 99 is past its end]');
    assert.equal(past.data.total_lines, 10);
    assert.equal(past.data.end_line, null);
    const last = await box.call(readFile, { path: 'Notes/ten.md', start_line: 10 });
    assert.equal(last.content, 'line 10\n');
  });

  it('refuses a range upside down and tail with a range', async () => {
    await refused(
      box.call(readFile, { path: 'Notes/ten.md', start_line: 5, end_line: 2 }),
      'INVALID_PARAMS',
      /before start_line/,
    );
    await refused(
      box.call(readFile, { path: 'Notes/ten.md', tail: 2, start_line: 1 }),
      'INVALID_PARAMS',
      /not both/,
    );
  });

  it('caps a huge file and says where to go on', async () => {
    const { content, data } = await box.call(readFile, { path: 'Notes/huge.txt' });
    assert.ok(Buffer.byteLength(content) < 2048 + 200, `${Buffer.byteLength(content)} bytes`);
    assert.equal(data.truncated, true);
    assert.equal(data.next_start_line, data.end_line + 1);
    assert.match(content, /read on with start_line: \d+\]$/);
    const further = await box.call(readFile, { path: 'Notes/huge.txt', start_line: 4990 });
    assert.equal(further.data.truncated, false);
    assert.equal(further.data.total_lines, 5000);
    const tail = await box.call(readFile, { path: 'Notes/huge.txt', tail: 1000 });
    assert.equal(tail.data.truncated, true);
    assert.ok(Buffer.byteLength(tail.content) < 2048 + 200);
    const long = await box.call(readFile, { path: 'Notes/one-line.txt' });
    assert.match(long.content, /line 1 alone is longer than 2048 bytes/);
  });

  it('refuses binary files, text that is not UTF-8, folders and missing files with clear errors', async () => {
    await refused(
      box.call(readFile, { path: 'Notes/image.png' }),
      'EXECUTION_FAILED',
      /binary file/,
    );
    await refused(
      box.call(readFile, { path: 'Notes/latin1.txt' }),
      'EXECUTION_FAILED',
      /not UTF-8/,
    );
    await refused(
      box.call(readFile, { path: 'Notes' }),
      'EXECUTION_FAILED',
      /is a folder; use list_directory/,
    );
    await refused(
      box.call(readFile, { path: 'Notes/nope.md' }),
      'EXECUTION_FAILED',
      /does not exist/,
    );
  });

  it(
    'refuses a fifo at once instead of waiting for a writer (the attack replayed)',
    { timeout: 20_000 },
    async () => {
      // An agent with a shell can make one. Opening it to read used to wait for a writer while
      // holding a thread of libuv's pool, the threads every note's file work goes through: four
      // such calls stopped the daemon's reads, writes and moves for good.
      execFileSync('mkfifo', [join(box.vault, 'Notes', 'pipe.md')]);
      for (let i = 0; i < 6; i++) {
        await refused(
          box.call(readFile, { path: 'Notes/pipe.md' }),
          'EXECUTION_FAILED',
          /is not a regular file/,
        );
      }
      await refused(
        box.call(copyFile, { source: 'Notes/pipe.md', destination: 'Notes/copy.md' }),
        'EXECUTION_FAILED',
        /is not a regular file/,
      );
      // The file work still has every thread.
      assert.equal(
        (await box.call(readFile, { path: 'Notes/ten.md', end_line: 1 })).content,
        'line 1',
      );
    },
  );
});

describe('list_directory, search_files and file_info', () => {
  let box: FsSandbox;
  before(async () => {
    box = await makeSandbox({ max_depth: 3, max_results: 50 });
    await mkdir(join(box.vault, 'Projects', 'alpha', 'deep', 'deeper', 'deepest', 'bottom'), {
      recursive: true,
    });
    await writeFile(
      join(box.vault, 'Projects', 'alpha', 'plan.md'),
      '# Plan\nShip the TODO list\nnothing\n',
    );
    await writeFile(join(box.vault, 'Projects', 'alpha', 'notes.txt'), 'todo: call Bob\n');
    await writeFile(join(box.vault, 'Projects', 'readme.md'), 'Read me\n');
    await writeFile(
      join(box.vault, 'Projects', 'alpha', 'deep', 'deeper', 'deepest', 'bottom', 'far.md'),
      'TODO far\n',
    );
    await writeFile(join(box.vault, 'Projects', 'blob.bin'), Buffer.from([0, 1, 2, 3]));
    await symlink(box.outside, join(box.vault, 'Projects', 'out-link'));
  });
  after(() => box.cleanup());

  it('lists a folder with type, size and time, links as links', async () => {
    const { data, content } = await box.call(listDirectory, { path: 'Projects' });
    const byPath = new Map<string, any>(data.entries.map((e: any) => [e.path, e]));
    assert.equal(byPath.get('alpha')?.type, 'directory');
    assert.equal(byPath.get('readme.md')?.size, 8);
    assert.equal(byPath.get('out-link')?.type, 'symlink');
    assert.match(byPath.get('readme.md')?.modified, /^\d{4}-\d\d-\d\dT/);
    assert.match(content, /file {2}readme\.md {2}\(8 bytes\)/);
    assert.equal(data.truncated, false);
  });

  it('lists recursively within max_depth and max_entries, never through a link', async () => {
    const { data } = await box.call(listDirectory, { path: 'Projects', recursive: true });
    const paths = data.entries.map((e: any) => e.path);
    assert.ok(paths.includes('alpha/plan.md'));
    assert.ok(!paths.some((p: string) => p.startsWith('out-link/')), paths.join(','));
    assert.ok(!paths.some((p: string) => p.endsWith('far.md')));
    assert.equal(data.truncated, true);
    const few = await box.call(listDirectory, {
      path: 'Projects',
      recursive: true,
      max_entries: 2,
    });
    assert.equal(few.data.entries.length, 2);
    assert.match(
      few.data.truncated_reason,
      /more than 2 entries: ask for more with max_entries \(at most 1000\)/,
    );
  });

  it('never tells an agent to ask for more than the config lets it have', async () => {
    const small = await makeSandbox({ max_entries: 2, max_results: 2 });
    try {
      for (const name of ['a', 'b', 'c'])
        await writeFile(join(small.vault, 'Notes', `${name}.md`), 'x\n');
      const listed = await small.call(listDirectory, { path: 'Notes', max_entries: 5000 });
      assert.equal(listed.data.entries.length, 2);
      assert.doesNotMatch(listed.content, /ask for more/);
      assert.match(
        listed.data.truncated_reason,
        /the most a listing holds here \(tools\.filesystem\.max_entries\): list a sub-folder/,
      );
      const found = await small.call(searchFiles, { pattern: '*.md', max_results: 5000 });
      assert.equal(found.data.matches.length, 2);
      assert.match(found.data.truncated_reason, /the most a search returns here/);
    } finally {
      await small.cleanup();
    }
  });

  it("leaves vaultd's state out of a listing of the vault", async () => {
    const { data } = await box.call(listDirectory, { recursive: true, max_entries: 1000 });
    const paths: string[] = data.entries.map((e: any) => e.path);
    assert.ok(paths.includes('Notes'));
    assert.ok(!paths.some((p) => p.startsWith('.vaultd')), paths.join(','));
  });

  it('finds files by name glob and by path glob', async () => {
    const names = (
      await box.call(searchFiles, { pattern: '*.md', path: 'Projects' })
    ).data.matches.map((m: any) => m.path);
    assert.deepEqual(names.sort(), ['Projects/alpha/plan.md', 'Projects/readme.md']);
    const paths = (
      await box.call(searchFiles, { pattern: 'alpha/**/*.{md,txt}', path: 'Projects' })
    ).data.matches.map((m: any) => m.path);
    assert.deepEqual(paths.sort(), ['Projects/alpha/notes.txt', 'Projects/alpha/plan.md']);
  });

  it('greps content with line numbers, case-insensitive unless asked, literal or regex', async () => {
    const { data, content } = await box.call(searchFiles, {
      pattern: '*',
      path: 'Projects',
      content: 'todo',
    });
    assert.deepEqual(data.matches.map((m: any) => `${m.path}:${m.line}`).sort(), [
      'Projects/alpha/notes.txt:1',
      'Projects/alpha/plan.md:2',
    ]);
    assert.match(content, /Projects\/alpha\/plan\.md:2: Ship the TODO list/);
    assert.equal(data.skipped_files, 1); // the binary file
    const exact = await box.call(searchFiles, {
      pattern: '*',
      path: 'Projects',
      content: 'TODO',
      case_sensitive: true,
    });
    assert.equal(exact.data.matches.length, 1);
    const re = await box.call(searchFiles, {
      pattern: '*.md',
      path: 'Projects',
      content: '^#\\s+\\w+$',
      regex: true,
    });
    assert.deepEqual(
      re.data.matches.map((m: any) => m.text),
      ['# Plan'],
    );
  });

  it('refuses a regex that does not compile, and stops a catastrophic one at the time bound', async () => {
    await refused(
      box.call(searchFiles, { pattern: '*', content: '(unclosed', regex: true }),
      'INVALID_PARAMS',
      /not a valid regular expression/,
    );
    await writeFile(join(box.vault, 'Notes', 'redos.txt'), `${'a'.repeat(40)}!\n`);
    const slow = await makeSandbox({ search_timeout_ms: 300 });
    try {
      await writeFile(join(slow.vault, 'Notes', 'redos.txt'), `${'a'.repeat(40)}!\n`);
      const { data } = await slow.call(searchFiles, {
        pattern: '*.txt',
        path: 'Notes',
        content: '^(a+)+$',
        regex: true,
      });
      assert.equal(data.truncated, true);
      assert.match(data.truncated_reason, /stopped after 300 ms/);
    } finally {
      await slow.cleanup();
    }
  });

  it('bounds a search by depth and by the entries it looks at, and says so', async () => {
    const deep = await box.call(searchFiles, { pattern: 'far.md', path: 'Projects' });
    assert.deepEqual(deep.data.matches, []);
    assert.match(deep.data.truncated_reason, /deeper than 3 levels/);
    const few = await makeSandbox({ max_visited: 3 });
    try {
      for (const n of [1, 2, 3, 4, 5]) await writeFile(join(few.vault, 'Notes', `n${n}.md`), 'x\n');
      const { data } = await few.call(searchFiles, { pattern: '*.md', path: 'Notes' });
      assert.equal(data.matches.length, 3);
      assert.match(data.truncated_reason, /after looking at 3 entries/);
    } finally {
      await few.cleanup();
    }
  });

  it('bounds a search by max_results', async () => {
    const { data } = await box.call(searchFiles, {
      pattern: '*',
      path: 'Projects',
      max_results: 2,
    });
    assert.equal(data.matches.length, 2);
    assert.equal(data.truncated, true);
  });

  it('tells what is at a path', async () => {
    const file = await box.call(fileInfo, { path: 'Projects/readme.md' });
    assert.equal(file.data.type, 'file');
    assert.equal(file.data.size, 8);
    assert.equal(file.data.writable, true);
    assert.match(file.data.mode, /^0[0-7]{3}$/);
    const dir = await box.call(fileInfo, { path: 'Projects' });
    assert.equal(dir.data.type, 'directory');
    assert.equal(dir.data.entries, 4);
    const dash = await box.call(fileInfo, { path: 'Dashboard.md' });
    assert.equal(dash.data.writable, false);
    await refused(box.call(fileInfo, { path: 'nope' }), 'EXECUTION_FAILED', /does not exist/);
  });
});
