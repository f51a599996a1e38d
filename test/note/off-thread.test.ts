import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  applyWriteBack,
  NoteTooComplexError,
  NoteWorker,
  parseNote,
} from '../../src/note/index.ts';
import { readApprovalSection, renderApprovalSection } from '../../src/approval/index.ts';
import type { ToolResult } from '../../src/protocol/types.ts';

function callText(name: string, parameters: Record<string, unknown>): string {
  return '```json\n' + JSON.stringify({ tool_call: { name, parameters } }) + '\n```\n';
}

function successResult(id: string, name: string, content: string): ToolResult {
  return {
    id,
    name,
    success: true,
    status: 'success',
    content,
    error: null,
    metadata: {
      execution_time_ms: 1,
      safety_level: 'safe',
      approved_by: 'auto',
      attempts: 1,
      cached: false,
      finished_at: '2026-11-27T10:00:00.000Z',
    },
  } as ToolResult;
}

const call = '```json\n{"tool_call": {"name": "search_web", "parameters": {"query": "x"}}}\n```\n';

describe('NoteWorker: large notes off the main thread', () => {
  const worker = new NoteWorker({ inlineChars: 1024, timeoutMs: 10_000 });
  after(() => worker.close());

  it('reads a short note with long front-matter in the worker too, and the same as in the thread', async () => {
    // The YAML library reads 1–4 ms a kilobyte: front-matter over 8 KiB is read off the main
    // thread whatever the note's length.
    const inlineWorker = new NoteWorker({ timeoutMs: 10_000 });
    try {
      const tags = Array.from({ length: 1500 }, (_, i) => `  - tag${i}`).join('\n');
      const text = `---\ntitle: long\ntags:\n${tags}\n---\n${call}`;
      assert.ok(text.length < 64 * 1024 && text.length > 8 * 1024);
      assert.equal(inlineWorker.isInline(text), false);
      assert.equal(inlineWorker.isInline(`---\ntitle: short\n---\n${'x'.repeat(20_000)}`), true);
      assert.equal(inlineWorker.isInline(`${'x'.repeat(20_000)}\n---\n`), true);
      const parsed = await inlineWorker.parse(text);
      assert.deepEqual(parsed.calls, parseNote(text).calls);
      assert.equal((parsed.data['tags'] as unknown[]).length, 1500);
    } finally {
      await inlineWorker.close();
    }
  });

  it('writes back a note of a long run of blank lines within the deadline (review finding)', async () => {
    // The write-back counted the line breaks ending the note with /(?:\r\n|\r|\n)*$/, tried at
    // every line break of a run inside it: 250,000 blank lines took past the 20 s deadline twice,
    // and the note went to Failed/ with its call run and its result never written.
    const text = `${call}${'\n'.repeat(250_000)}end\n`;
    const body = `${' '.repeat(100_000)}x${'\n \t'.repeat(50_000)}`;
    const edited = await worker.edit(text, {
      results: [successResult(parseNote(call).calls[0]?.id ?? '', 'search_web', 'ok')],
      section: { heading: 'Approval', body },
      frontMatter: {},
    });
    const out = edited.text;
    assert.ok(out.startsWith(text), 'the note is kept, the section after it');
    assert.ok(out.includes('x\n\n## Tool Results'), 'the section body is trimmed at its end');
    assert.equal(parseNote(out).results.size, 1);
  });

  it('reads an Approval section in the worker no further than maxSectionCalls', async () => {
    const capped = new NoteWorker({ inlineChars: 1024, timeoutMs: 10_000, maxSectionCalls: 10 });
    try {
      let section = '## Approval\n\n';
      for (let i = 0; i < 50; i++)
        section += `### x · \`call_${i.toString(16).padStart(12, '0')}\`\n- [x] approve\n`;
      const text = `# n\n\n${section}`;
      assert.ok(text.length > 1024);
      const read = await capped.approval(text);
      assert.equal(read.decisions.size, 10);
      assert.match(read.problems[0] ?? '', /more than 10 calls/);
    } finally {
      await capped.close();
    }
  });

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
    assert.ok(out.text.startsWith('---\ntitle: big\nstatus: done\n---\n'));
    assert.ok(out.text.endsWith(call));
  });

  it('gives a parse of thousands of calls, results and bad blocks as parseNote does', async () => {
    // Past 2,000 items the lists cross as lines of JSON, read a few at a time.
    const blocks: string[] = [];
    for (let n = 0; n < 1_500; n++) {
      blocks.push(
        '```json\n' +
          JSON.stringify({
            tool_call: {
              name: 'search_web',
              parameters: { query: `q ${n} ünï 🎉`, ['__proto__']: { n }, list: [n, 1.5, null] },
            },
          }) +
          '\n```\n',
      );
      if (n % 3 === 0) blocks.push('```json\n{"tool_call": {"name": "x", broken\n```\n');
      if (n % 5 === 0)
        blocks.push(
          '```json\n' +
            JSON.stringify({
              tool_result: { id: `call_${n}`, name: 'search_web', status: 'success' },
            }) +
            '\n```\n',
        );
    }
    const text = `---\ntitle: many\n---\n${blocks.join('\n')}`;
    const parsed = await worker.parse(text);
    const inline = parseNote(text);
    assert.ok(parsed.calls.length + parsed.invalid.length + parsed.results.size > 2_000);
    assert.deepEqual(parsed, inline);
    const args = parsed.calls[7]?.arguments as Record<string, unknown>;
    assert.ok(Object.hasOwn(args, '__proto__'), '__proto__ stays a plain key');
    assert.equal(Object.getPrototypeOf(args), Object.prototype);
  });

  it('applies a write-back of thousands of results as applyWriteBack does', async () => {
    const calls = Array.from({ length: 2_500 }, (_, n) =>
      callText('search_web', { query: `q${n}` }),
    );
    const text = `---\ntitle: many\n---\n${calls.join('\n')}`;
    const parsed = parseNote(text);
    const results = parsed.calls.map((c) => successResult(c.id, c.name, `answer ${c.id} ✓`));
    const edit = { results, order: parsed.calls.map((c) => c.id), frontMatter: { status: 'done' } };
    const out = await worker.edit(text, edit);
    assert.equal(out.unchanged, false);
    assert.equal(out.text, applyWriteBack(text, edit));
    assert.equal(Buffer.from(out.bytes).toString('utf8'), out.text);
    // The text decoded from the worker's bytes keeps a byte order mark (TextDecoder drops it by
    // default, and a second round of the write-back would then have written the note without it).
    const bom = await worker.edit(`\uFEFF${text}`, edit);
    assert.equal(bom.text, applyWriteBack(`\uFEFF${text}`, edit));
    assert.ok(bom.text.startsWith('\uFEFF---'));
    const same = await worker.edit(text, { results: [], frontMatter: { title: 'many' } });
    assert.equal(same.unchanged, true);
    assert.equal(same.text, text);
  });

  it("reads a large note's Approval section in the worker as readApprovalSection does", async () => {
    const pending = Array.from({ length: 300 }, (_, n) => ({
      id: `call_${n}`,
      name: 'danger_zone',
      arguments: { target: `t${n}` },
      requestedAt: '2026-11-27T10:00:00.000Z',
      nonce: `nonce${n}`,
    }));
    const body = renderApprovalSection(pending).replace('- [ ] approve', '- [x] approve');
    const text = `# Note\n\n${'prose\n'.repeat(300)}\n## Approval\n\n${body}`;
    assert.ok(text.length > 1024);
    const read = await worker.approval(text);
    assert.deepEqual(read, readApprovalSection(text));
    assert.equal(read.decisions.size, 300);
    assert.equal(read.decisions.get('call_0')?.decision, 'approve');
    assert.equal(await worker.approval(text), read, 'the same text is not read twice');
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
