import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  readApprovalSection,
  renderApprovalSection,
  type PendingCall,
} from '../../src/approval/section.ts';
import { rejectionMessage, resolveDecisions } from '../../src/approval/resolve.ts';
import { EXPIRED_REASON } from '../../src/approval/expiry.ts';

const calls: PendingCall[] = [
  {
    id: 'a',
    name: 'send_notification',
    arguments: { recipient: 'x@example.com' },
    requestedAt: '2026-01-01T00:00:00.000Z',
  },
  {
    id: 'b',
    name: 'write_file',
    arguments: { path: 'a.md', content: 'x' },
    requestedAt: '2026-01-01T00:00:00.000Z',
  },
];
const text = `Body\n\n## Approval\n\n${renderApprovalSection(calls)}`;
const tickFirst = (source: string, box: string): string =>
  source.replace(`- [ ] ${box}`, `- [x] ${box}`);

describe('resolveDecisions', () => {
  it('keeps undecided calls waiting without problems', () => {
    assert.deepEqual(resolveDecisions(calls, readApprovalSection(text)), [
      { kind: 'wait', id: 'a', name: 'send_notification', problems: [] },
      { kind: 'wait', id: 'b', name: 'write_file', problems: [] },
    ]);
  });
  it('approves a ticked call as human, and an edited one as human-modified with the original kept', () => {
    const edited = tickFirst(
      text.replace('"recipient": "x@example.com"', '"recipient": "y@example.com"'),
      'approve',
    );
    const [a] = resolveDecisions(calls, readApprovalSection(edited));
    assert.deepEqual(a, {
      kind: 'approve',
      id: 'a',
      name: 'send_notification',
      arguments: { recipient: 'y@example.com' },
      approvedBy: 'human-modified',
      originalArguments: { recipient: 'x@example.com' },
      grant: false,
    });
    const [plain] = resolveDecisions(calls, readApprovalSection(tickFirst(text, 'approve')));
    assert.equal(plain?.kind === 'approve' && plain.approvedBy, 'human');
  });
  it('asks for a grant when always allow is ticked', () => {
    const [a] = resolveDecisions(calls, readApprovalSection(tickFirst(text, 'always allow')));
    assert.equal(a?.kind === 'approve' && a.grant, true);
  });
  it('rejects with the reason and a message for the agent', () => {
    const rejected = tickFirst(text, 'reject').replace('Reason: ', 'Reason: not to customers');
    const [a] = resolveDecisions(calls, readApprovalSection(rejected));
    assert.equal(a?.kind, 'reject');
    assert.ok(a?.kind === 'reject');
    assert.equal(a.reason, 'not to customers');
    assert.match(
      a.message,
      /A human rejected this call \(ticked reject\) with the reason: not to customers\. Do not retry it unchanged/,
    );
  });
  it('moving to the rejected folder rejects every call, even ticked approvals', () => {
    const resolutions = resolveDecisions(
      calls,
      readApprovalSection(tickFirst(text, 'approve')),
      'reject',
    );
    assert.deepEqual(
      resolutions.map((r) => r.kind),
      ['reject', 'reject'],
    );
    assert.ok(resolutions[0]?.kind === 'reject');
    assert.equal(resolutions[0].reason, 'no reason given');
    assert.match(
      resolutions[0].message,
      /moved the note to the rejected folder\) without giving a reason/,
    );
  });
  it('moving to the approved folder approves the undecided calls but keeps a ticked reject', () => {
    const resolutions = resolveDecisions(
      calls,
      readApprovalSection(tickFirst(text, 'reject')),
      'approve',
    );
    assert.deepEqual(
      resolutions.map((r) => r.kind),
      ['reject', 'approve'],
    );
  });
  it('moving a note without its Approval section to the approved folder approves the original calls', () => {
    const resolutions = resolveDecisions(calls, readApprovalSection('Body only\n'), 'approve');
    assert.deepEqual(
      resolutions.map((r) => r.kind === 'approve' && r.arguments),
      calls.map((c) => c.arguments),
    );
  });
  it('keeps a call waiting when its part of the section is gone or unreadable, even when moved', () => {
    const withoutB = text.slice(0, text.indexOf('### write_file'));
    const [, b] = resolveDecisions(calls, readApprovalSection(withoutB), 'approve');
    assert.equal(b?.kind, 'wait');
    assert.match(b?.kind === 'wait' ? b.problems.join() : '', /missing from the Approval section/);
    const broken = text.replace('"recipient": "x@example.com"', '"recipient": x@example.com');
    const [a] = resolveDecisions(calls, readApprovalSection(broken), 'approve');
    assert.equal(a?.kind, 'wait');
  });
  it('keeps waiting when the recorded tool differs from the section', () => {
    const other: PendingCall[] = [{ ...calls[0]!, name: 'delete_file' }];
    const [a] = resolveDecisions(other, readApprovalSection(tickFirst(text, 'approve')));
    assert.equal(a?.kind, 'wait');
  });
  it('words an expired rejection differently', () => {
    assert.match(rejectionMessage(EXPIRED_REASON), /approval expired/);
    assert.match(rejectionMessage(undefined), /without giving a reason/);
  });
});
