// Review findings on the write-back's edits, each replayed: a `status` anchor another key aliases
// made every write-back throw (the note to Failed/, its result only in the ledger); a lone-CR note
// had its section heading swallowed into an HTML block (the next write-back added a second
// section) and its front-matter values rewritten with a CR in them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyWriteBack, parseNote, updateFrontMatter } from '../../src/note/index.ts';
import { readStructure } from '../../src/note/structure.ts';
import type { ToolResult } from '../../src/protocol/types.ts';

function result(id: string, content: string): ToolResult {
  return {
    id,
    name: 'read_file',
    success: true,
    status: 'success',
    content,
    error: null,
    metadata: {
      execution_time_ms: 3,
      safety_level: 'safe',
      approved_by: 'auto',
      attempts: 1,
      cached: false,
      finished_at: '2026-11-28T00:00:00.000Z',
    },
  } as ToolResult;
}

const FRONT = { status: 'done', tool_calls: 1, tool_errors: 0 };

describe('write-back edits against review findings', () => {
  it('leaves front-matter whose status an alias points at as it is, without throwing', () => {
    const note = '---\nstatus: &s new\nprevious: *s\n---\n# Note\n';
    assert.equal(updateFrontMatter(note, FRONT), note);
    const call =
      '```json\n{"tool_call": {"name": "read_file", "parameters": {"path": "a.md"}, "id": "c1"}}\n```\n';
    const out = applyWriteBack(note + call, {
      results: [result('c1', 'ok')],
      order: ['c1'],
      frontMatter: FRONT,
    });
    assert.equal(parseNote(out).results.get('c1')?.status, 'success');
  });

  it('updates lone-CR front-matter with CR, and gives a lone-CR note CR front-matter', () => {
    // Review finding: front-matter added to a lone-CR note took LF, and what vaultd wrote after
    // it took LF as well (a note of mixed line endings, edited again at every write-back).
    const note = '---\rtitle: x\rtags: [a]\r---\rbody\r';
    const updated = updateFrontMatter(note, FRONT);
    assert.ok(!updated.includes('\n'), JSON.stringify(updated));
    assert.ok(updated.endsWith('---\rbody\r'));
    assert.equal(parseNote(updated).data['title'], 'x');
    for (const [key, value] of Object.entries(FRONT)) {
      assert.deepEqual(parseNote(updated).data[key], value, key);
    }
    assert.equal(updateFrontMatter(updated, FRONT), updated, 'a second update changes nothing');
    const bare = 'body\rmore\r';
    const added = updateFrontMatter(bare, FRONT);
    assert.ok(!added.includes('\n'), JSON.stringify(added));
    assert.ok(added.endsWith(`---\r${bare}`));
    assert.deepEqual(Object.keys(parseNote(added).data), Object.keys(FRONT));
    const call =
      '```json\r{"tool_call": {"name": "read_file", "parameters": {"path": "a.md"}, "id": "c1"}}\r```\r';
    const written = applyWriteBack(call, {
      results: [result('c1', 'ok')],
      order: ['c1'],
      frontMatter: FRONT,
    });
    assert.ok(!written.includes('\n'), JSON.stringify(written));
    assert.equal(parseNote(written).data['status'], 'done');
    // Mixed with LF, it is left as it is.
    const mixed = '---\rtitle: x\ntags: [a]\r---\rbody\r';
    assert.equal(updateFrontMatter(mixed, FRONT), mixed);
  });

  for (const tail of ['\r<div>\rsome html\r', '\r<div>\rsome html', '']) {
    it(`writes a lone-CR note's section with CR, once, after ${JSON.stringify(tail)}`, () => {
      const call =
        '```json\r{"tool_call": {"name": "read_file", "parameters": {"path": "a.md"}, "id": "c1"}}\r```\r';
      const note = call + tail;
      let out = applyWriteBack(note, {
        results: [result('c1', 'ok')],
        order: ['c1'],
        frontMatter: {},
      });
      assert.ok(out.startsWith(note.replace(/\r$/, '')), "the note's own text first");
      assert.ok(!out.includes('\n'), 'no LF added to a CR note');
      assert.deepEqual(
        readStructure(out).headings.map((h) => h.text),
        ['Tool Results'],
      );
      out = applyWriteBack(out, {
        results: [result('c1', 'again')],
        order: ['c1'],
        section: { heading: '## Approval', body: '- [ ] approve' },
        frontMatter: {},
      });
      assert.equal(out.split('## Tool Results').length - 1, 1, 'one section');
      assert.equal(out.split('"tool_result"').length - 1, 1, 'one result, replaced');
    });
  }
});
