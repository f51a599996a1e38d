// Issue 14, point 7: note names and tool names come from agents; Dashboard.md must show them as
// text, never as markup (a wiki link closed early, a table cell split, a fence opened).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { renderDashboard } from '../../src/observe/dashboard.ts';

it('shows hostile note and tool names as text in Dashboard.md', () => {
  const names = [
    'a]] [[Secrets',
    'b|c',
    'x\n## Injected',
    'd#e^f',
    '`code` <img src=x>',
    '[link](http://evil)',
    'c %%',
  ];
  const text = renderDashboard({
    snapshot: {
      at: '2026-11-24T00:00:00.000Z',
      notes: { inbox: 0 },
      pending: names.map((n) => ({
        path: `Pending_Approval/${n}.md`,
        calls: [{ id: 'c', tool: 'x`y|z', requested_at: '2026-11-24T00:00:00.000Z' }],
      })),
    },
    recent: names.map((n) => ({
      note: `Done/${n}.md`,
      tool: 'evil`tool',
      callId: 'c',
      status: 'error',
      code: 'UNKNOWN_TOOL',
      ms: 1,
      at: '2026-11-24T00:00:00.000Z',
    })),
    tools: {},
    pendingFolder: 'Pending_Approval',
    state: 'ready',
    queueDepth: 0,
  });
  assert.doesNotMatch(text, /\[\[Secrets/, 'no wiki link opened by a name');
  // `#` in a link's target would point at a heading of another note (review finding).
  assert.match(text, /\(Pending_Approval\/d%23e\^f\.md\)|\(Pending_Approval\/d%23e%5Ef\.md\)/);
  assert.doesNotMatch(text, /^## Injected/m, 'no heading from a name');
  // A backslash before a punctuation character makes it literal in CommonMark.
  assert.doesNotMatch(text, /(?<!\\)<img/, 'no HTML from a name');
  assert.doesNotMatch(text, /(?<!\\)\]\(http:\/\/evil\)/, 'no link from a name');
  // An Obsidian comment opened by a name would hide the rest of the page.
  assert.doesNotMatch(text, /(?<!\\)%(?<!\\)%/, 'no comment opened by a name');
  const waiting = text.slice(text.indexOf('## Waiting for you'), text.indexOf('## Recent calls'));
  assert.equal(waiting.match(/^- /gm)?.length, names.length, 'one line per pending note');
  const table = text.slice(text.indexOf('## Recent calls'), text.indexOf('## Tools since start'));
  for (const row of table.split('\n').filter((l) => l.startsWith('| 20'))) {
    assert.equal(row.split(/(?<!\\)\|/).length, 7, `five cells in ${row}`);
  }
});

it('a note of 10,000 pending calls is one short line, and at most 100 pending notes are listed', () => {
  const calls = (n: number, tool: string) =>
    Array.from({ length: n }, (_, i) => ({
      id: `c${i}`,
      tool,
      requested_at: '2026-11-27T00:00:00.000Z',
    }));
  const text = renderDashboard({
    snapshot: {
      at: '2026-11-27T00:00:00.000Z',
      notes: { inbox: 0 },
      pending: [
        {
          path: 'Pending_Approval/many.md',
          calls: [...calls(10_000, 'danger_zone'), ...calls(1, 'send_notification')],
        },
        ...Array.from({ length: 150 }, (_, i) => ({
          path: `Pending_Approval/n${i}.md`,
          calls: calls(1, 'x'),
        })),
      ],
    },
    recent: [],
    tools: {},
    pendingFolder: 'Pending_Approval',
    state: 'ready',
    queueDepth: 0,
  });
  const waiting = text.slice(text.indexOf('## Waiting for you'), text.indexOf('## Recent calls'));
  assert.match(
    waiting,
    /^- \[\[Pending_Approval\/many\]\]: `danger_zone` ×10000, `send_notification`$/m,
  );
  assert.equal(waiting.match(/^- \[\[/gm)?.length, 100);
  assert.match(waiting, /^- … and 51 more note\(s\) in Pending\\_Approval\/$/m);
  assert.ok(text.length < 20_000, `${text.length} characters`);
});
