// Review finding (an audit of every regular expression hostile text reaches): seven patterns took
// time growing with the square of their input, each on the main thread. A tool's output of
// 256 KiB with `a.a.a.…` after a `://` held the daemon 16 s in the redactor, a 1 MiB preview over
// four minutes; a 64 KiB note's Approval box line with a U+2028 7.8 s; a remote's git error of
// 512 KiB 79 s; a 2 MiB search page 27 s. Each input below is one that took seconds before (a
// regression hangs the test), and the rewritten code is checked against the old patterns on
// small random texts, where they are fast, so it reads what they read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readApprovalSection, renderApprovalSection } from '../../src/approval/section.ts';
import { createRedactor, REDACTED } from '../../src/observe/redact.ts';
import { gitFailure, hideCredentials } from '../../src/tools/git/run.ts';
import { parseDuckDuckGoHtml } from '../../src/tools/search-web/providers/duckduckgo.ts';
import { seededInts } from '../helpers/random.ts';

function randomText(
  next: (n: number) => number,
  alphabet: readonly string[],
  most: number,
): string {
  let out = '';
  const length = next(most);
  for (let i = 0; i < length; i++) out += alphabet[next(alphabet.length)];
  return out;
}

const reasonOf = (stderr: string): unknown =>
  (failed(stderr).data as Record<string, unknown> | undefined)?.['reason'];

const failed = (stderr: string) =>
  gitFailure(
    {
      exitCode: 1,
      signal: null,
      stdout: '',
      stderr,
      truncated: false,
      killed: false,
      durationMs: 1,
    },
    'git checkout',
  );

describe('text hostile parties control is read in time linear in it', () => {
  it('the redactor and git’s credentials hiding find URL user-info as the old patterns did', () => {
    const redact = createRedactor([]);
    const hostile = `x:// ${'a.'.repeat(128 * 1024)}`;
    assert.equal(redact(hostile), hostile);
    assert.equal(hideCredentials(hostile), hostile);
    const oldRedact = (t: string) =>
      t.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, `$1${REDACTED}@`);
    const oldHide = (t: string) => t.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s'"]*@/gi, '$1');
    const next = seededInts(21);
    const alphabet = [
      'a',
      'B',
      '1',
      '+',
      '.',
      '-',
      '_',
      ':',
      '/',
      '@',
      ' ',
      '"',
      'é',
      '://',
      'x:',
      'u:p@',
    ];
    for (let i = 0; i < 20_000; i++) {
      const text = randomText(next, alphabet, 14);
      assert.equal(redact(text), oldRedact(text), JSON.stringify(text));
      assert.equal(hideCredentials(text), oldHide(text), JSON.stringify(text));
    }
    assert.equal(
      redact('see https://ann:s3cret@host/x and ftp://b:c@d'),
      `see https://${REDACTED}@host/x and ftp://${REDACTED}@d`,
    );
  });

  it('a git failure of many pathspecs is classified line by line', () => {
    assert.equal(reasonOf(`pathspec ${'pathspec '.repeat(60_000)}`), 'git_failed');
    assert.equal(
      reasonOf("error: pathspec 'x.md' did not match any file(s) known to git"),
      'unknown_path',
    );
    assert.equal(reasonOf('pathspec  did not match'), 'unknown_path');
    assert.equal(reasonOf('pathspec x\n did not match'), 'git_failed');
  });

  it('an Approval section’s box and heading lines read the same, without backtracking', () => {
    const section = renderApprovalSection([
      {
        id: 'c1',
        name: 'danger_zone',
        arguments: { target: 't' },
        requestedAt: '2026-11-28T00:00:00.000Z',
        expiresAt: '2026-11-29T00:00:00.000Z',
        reason: 'dangerous',
      },
    ]);
    const note = `# T\n\n## Approval\n\n${section}`;
    const approved = note.replace('- [ ] approve', '- [x]   approve');
    assert.equal(readApprovalSection(approved).decisions.get('c1')?.decision, 'approve');
    const scoped = readApprovalSection(
      note.replace(
        '- [ ] always allow danger_zone',
        '- [x] **always allow danger_zone(target:t*)**',
      ),
    ).decisions.get('c1');
    assert.equal(scoped?.decision, 'always');
    assert.equal(scoped?.grantScope, 'danger_zone(target:t*)');
    for (const line of [
      `- [ ]${' '.repeat(60_000)}\u2028`,
      `### t · ${' '.repeat(60_000)}\u2028x`,
      `- [ ] always allow x${'_'.repeat(60_000)}y`,
    ]) {
      readApprovalSection(`# T\n\n## Approval\n\n${line}\n`);
    }
  });

  it('a preview ending in a long run of line breaks is rendered', () => {
    const preview = `x${'\r'.repeat(19_000)}y\n…`;
    const out = renderApprovalSection([
      {
        id: 'c1',
        name: 'write_file',
        arguments: {},
        requestedAt: '2026-11-28T00:00:00.000Z',
        expiresAt: '2026-11-29T00:00:00.000Z',
        reason: 'r',
        preview: `${preview}\n\n\n`,
      },
    ]);
    assert.match(out, /y\n> …\n> `{3,}\n/);
  });

  it('a search page of class names and no tag ends is parsed', () => {
    assert.deepEqual(parseDuckDuckGoHtml(`${'<a result__a '.repeat(150_000)}>`), []);
    const page =
      '<div><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2F">Example</a>' +
      '<a class="result__snippet">text</a></div>';
    assert.equal(parseDuckDuckGoHtml(page)[0]?.url, 'https://example.org/');
  });
});
