import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { NoteTooComplexError, NoteWorker, parseNote } from '../../src/note/index.ts';

const call = '```json\n{"tool_call": {"name": "search_web", "parameters": {"query": "x"}}}\n```\n';

describe('NoteWorker: large notes off the main thread', () => {
  const worker = new NoteWorker({ inlineChars: 1024, timeoutMs: 10_000 });
  after(() => worker.close());

  it('parses a large note in the worker exactly as parseNote does in the thread', async () => {
    const text = `---\ntitle: big\n---\n${'A paragraph of prose.\n\n'.repeat(200)}${call}`;
    assert.ok(text.length > 1024);
    const parsed = await worker.parse(text);
    const inline = parseNote(text);
    assert.deepEqual(parsed.calls, inline.calls);
    assert.deepEqual(parsed.data, { title: 'big' });
    assert.ok(parsed.results instanceof Map);
  });

  it('applies a write-back in the worker', async () => {
    const text = `---\ntitle: big\n---\n${'line\n'.repeat(500)}${call}`;
    const out = await worker.edit(text, { results: [], frontMatter: { status: 'done' } });
    assert.ok(out.startsWith('---\ntitle: big\nstatus: done\n---\n'));
    assert.ok(out.endsWith(call));
  });

  it('handles small notes in the calling thread', async () => {
    const parsed = await worker.parse(call);
    assert.equal(parsed.calls.length, 1);
  });

  it('gives up on a note past the deadline with NoteTooComplexError, and recovers', async () => {
    const slow = new NoteWorker({ inlineChars: 10, timeoutMs: 50 });
    try {
      // 60 containers on each of 3,000 lines: about 0.6 s to parse on the bench machine, many
      // times the deadline on any machine.
      const nested = `${'> - '.repeat(60)}x\n`.repeat(3000) + call;
      await assert.rejects(slow.parse(nested), NoteTooComplexError);
      const parsed = await slow.parse(call);
      assert.equal(parsed.calls.length, 1, 'a fresh worker takes the next job');
    } finally {
      await slow.close();
    }
  });
});
