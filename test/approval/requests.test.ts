import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalGate } from '../../src/approval/gate.ts';
import {
  ApprovalRequests,
  readRequests,
  REQUEST_ID_PATTERN,
  type RequestDecision,
} from '../../src/approval/requests.ts';

const approve = (channel: RequestDecision['channel'] = 'tick'): RequestDecision => ({
  kind: 'approve',
  always: false,
  scope: null,
  channel,
  by: 'human',
  at: new Date().toISOString(),
  reason: null,
  arguments: null,
});

const call = {
  note: 'Pending_Approval/a.md',
  callId: 'c1',
  tool: 'send_notification',
  argsHash: 'h1',
  arguments: { recipient: 'a@example.com' },
  reason: 'dangerous',
  preview: null,
  expireAfterMs: 60_000,
};

describe('ApprovalRequests', () => {
  let stateDir: string;
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'vaultd-requests-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('gives each request a fresh random id and keeps it pending until decided', async () => {
    const store = await ApprovalRequests.open(stateDir);
    const a = await store.create(call);
    const b = await store.create(call);
    assert.match(a.id, REQUEST_ID_PATTERN);
    assert.notEqual(a.id, b.id);
    assert.equal(a.state, 'pending');
    assert.equal(Date.parse(a.expiresAt) - Date.parse(a.requestedAt), 60_000);
    assert.deepEqual(
      store.pending().map((r) => r.id),
      [a.id, b.id],
    );
    await store.close();
  });

  it('counts the calls waiting as it recorded them: pending and not past expiry (the pending metric)', async () => {
    // The metric counted the calls the notes' Approval sections listed: a forged section of 50
    // calls counted 50, a deleted one hid a waiting call (review finding).
    const store = await ApprovalRequests.open(stateDir);
    assert.equal(store.waiting(), 0);
    const a = await store.create(call);
    await store.create(call);
    await store.create({ ...call, expireAfterMs: 1000, now: new Date(Date.now() - 5000) });
    assert.equal(store.waiting(), 2, 'an expired request is not waiting');
    await store.decide(a.id, approve());
    assert.equal(store.waiting(), 1, 'a decided one neither');
    await store.close();
  });

  it('counts a decision once, only for a pending request, and survives a reopen', async () => {
    const store = await ApprovalRequests.open(stateDir);
    const request = await store.create(call);
    const first = await store.decide(request.id, approve());
    assert.equal(first.ok, true);
    const again = await store.decide(request.id, approve('cli'));
    assert.deepEqual(again, {
      ok: false,
      problem: 'no pending approval for this call (the request is approved)',
    });
    await store.setState(request.id, 'consumed');
    const replay = await store.decide(request.id, approve());
    assert.equal(replay.ok, false);
    const unknown = await store.decide('apr_zzzzzzzzzzzzzzzzzzzzzzzzzz', approve());
    assert.deepEqual(unknown, { ok: false, problem: 'no pending approval for this call' });
    await store.close();

    const reopened = await ApprovalRequests.open(stateDir);
    const read = reopened.get(request.id);
    assert.equal(read?.state, 'consumed');
    assert.equal(read?.decision?.channel, 'tick');
    await reopened.close();
  });

  it('expires a request past its time: a late decision does not count', async () => {
    const store = await ApprovalRequests.open(stateDir);
    const request = await store.create({
      ...call,
      expireAfterMs: 1000,
      now: new Date(Date.now() - 5000),
    });
    const late = await store.decide(request.id, approve());
    assert.deepEqual(late, { ok: false, problem: 'the approval expired' });
    assert.equal(store.get(request.id)?.state, 'expired');
    const other = await store.create({
      ...call,
      expireAfterMs: 1000,
      now: new Date(Date.now() - 5000),
    });
    const due = await store.expireDue();
    assert.deepEqual(
      due.map((r) => r.id),
      [other.id],
    );
    await store.close();
  });

  it('takes one of two decisions made at once, the other told no (review finding)', async () => {
    // Both found the request pending while the first was being written, both were told yes, and
    // the later line won: a call ran after its rejection was confirmed (CLI reject, HTTP approve).
    for (let round = 0; round < 20; round++) {
      const store = await ApprovalRequests.open(stateDir);
      const request = await store.create(call);
      const reject: RequestDecision = { ...approve('cli'), kind: 'reject', reason: 'no' };
      const [first, second] = await Promise.all([
        store.decide(request.id, round % 2 === 0 ? reject : approve('http')),
        store.decide(request.id, round % 2 === 0 ? approve('http') : reject),
      ]);
      assert.equal(first.ok, true, `round ${round}`);
      assert.equal(second.ok, false, `round ${round}`);
      const told = first.ok ? first.request.state : 'none';
      assert.equal(store.get(request.id)?.state, told);
      await store.close();
      const reopened = await ApprovalRequests.open(stateDir);
      assert.equal(reopened.get(request.id)?.state, told, 'the file says what was told');
      await reopened.close();
    }
  });

  it('consumes an approved request once however many claims ask at once (review finding)', async () => {
    const store = await ApprovalRequests.open(stateDir);
    const gate = new ApprovalGate({ requests: store });
    const request = await store.create(call);
    const decided = await store.decide(request.id, approve('http'));
    assert.ok(decided.ok);
    const gateCall = {
      id: 'c1',
      name: 'send_notification',
      arguments: call.arguments,
      argsHash: 'h1',
      safety: 'dangerous' as const,
    };
    const outcomes = await Promise.all([
      gate.consume(decided.request, gateCall, 'In_Progress/a.md'),
      gate.consume(decided.request, gateCall, 'Approved/a.md'),
      gate.consume(decided.request, gateCall, 'Rejected/a.md'),
    ]);
    assert.equal(outcomes.filter((o) => o.ok).length, 1);
    await store.close();
  });

  it('voids an approval left behind once its call is asked again, and expires one never acted on (review finding)', async () => {
    // A kill between the decision and the claim left an approved request; the call was asked
    // again, the human rejected that, and a note the agent wrote with the old nonce ran the call.
    const store = await ApprovalRequests.open(stateDir);
    const old = await store.create(call);
    assert.ok((await store.decide(old.id, approve('http'))).ok);
    const pendingCopy = await store.create({ ...call, note: 'Needs_Action/a.md' });
    const again = await store.create({ ...call, note: 'In_Progress/a.vaultd-1a-2b-abcd-0.md' });
    const superseded = await store.supersedeOlder(again);
    assert.deepEqual(
      superseded.map((r) => r.id),
      [old.id],
    );
    assert.equal(store.get(old.id)?.state, 'superseded');
    assert.equal(store.get(pendingCopy.id)?.state, 'pending', 'a waiting copy keeps its request');
    // Another call, or the same id in a note of another name, keeps its approval.
    const other = await store.create({ ...call, note: 'Pending_Approval/b.md' });
    assert.ok((await store.decide(other.id, approve('http'))).ok);
    assert.deepEqual(await store.supersedeOlder(again), []);
    // An approval not acted on within twice its time to wait expires.
    const now = Date.parse(other.requestedAt);
    const ids = (list: readonly { id: string }[]) => list.map((r) => r.id).sort();
    assert.deepEqual(
      ids(await store.expireDue(new Date(now + 90_000))),
      ids([pendingCopy, again]),
      'past its time, a pending request expires; an approved one not yet',
    );
    assert.equal(store.get(other.id)?.state, 'approved');
    assert.deepEqual(ids(await store.expireDue(new Date(now + 130_000))), [other.id]);
    assert.equal(store.get(other.id)?.state, 'expired');
    await store.close();
  });

  it('keeps a damaged file aside as evidence and reads what it can', async () => {
    const store = await ApprovalRequests.open(stateDir);
    const request = await store.create(call);
    await store.close();
    await appendFile(join(stateDir, 'approval-requests.jsonl'), 'garbage line\n{"t":"state"}\n');
    const reopened = await ApprovalRequests.open(stateDir);
    assert.equal(reopened.get(request.id)?.state, 'pending');
    assert.equal(reopened.damage?.badLines, 2);
    assert.match(await readFile(reopened.damage?.keptAt ?? '', 'utf8'), /garbage line/);
    await reopened.close();
  });

  it('lets another process read the requests without writing anything', async () => {
    const store = await ApprovalRequests.open(stateDir);
    const request = await store.create(call);
    await store.decide(request.id, approve('http'));
    const seen = await readRequests(stateDir);
    assert.deepEqual(
      seen.map((r) => [r.id, r.state, r.decision?.channel]),
      [[request.id, 'approved', 'http']],
    );
    assert.deepEqual(await readRequests(join(stateDir, 'nowhere')), []);
    await mkdir(join(stateDir, 'x'));
    await store.close();
  });

  it('keeps where a note was when bound ahead of its move, through a reopen and a compaction, until it moves again', async () => {
    const store = await ApprovalRequests.open(stateDir);
    const request = await store.create({ ...call, note: 'In_Progress/a.vaultd-x-1-2-3.md' });
    await store.moved(request.id, 'Pending_Approval/a.md', {
      movedFrom: 'In_Progress/a.vaultd-x-1-2-3.md',
    });
    assert.deepEqual(
      store.boundAhead('In_Progress/a.vaultd-x-1-2-3.md').map((r) => r.id),
      [request.id],
    );
    assert.deepEqual(store.boundAhead('In_Progress/a.vaultd-y-1-2-3.md'), []);
    await store.close();

    const reopened = await ApprovalRequests.open(stateDir);
    assert.equal(reopened.get(request.id)?.movedFrom, 'In_Progress/a.vaultd-x-1-2-3.md');
    await reopened.compact();
    await reopened.close();
    const compacted = await ApprovalRequests.open(stateDir);
    assert.equal(compacted.get(request.id)?.note, 'Pending_Approval/a.md');
    assert.equal(compacted.get(request.id)?.movedFrom, 'In_Progress/a.vaultd-x-1-2-3.md');
    // The same binding again writes nothing; a later move forgets where it was.
    await compacted.moved(request.id, 'Pending_Approval/a.md');
    assert.equal(compacted.get(request.id)?.movedFrom, 'In_Progress/a.vaultd-x-1-2-3.md');
    await compacted.moved(request.id, 'In_Progress/a.vaultd-z-1-2-3.md', { from: 'approved' });
    assert.equal(compacted.get(request.id)?.movedFrom, undefined);
    assert.equal(compacted.get(request.id)?.claimedFrom, 'approved');
    assert.deepEqual(compacted.boundAhead('In_Progress/a.vaultd-x-1-2-3.md'), []);
    // Decided and used, it is no longer open.
    await compacted.moved(request.id, 'Pending_Approval/a.md', {
      movedFrom: 'In_Progress/a.vaultd-z-1-2-3.md',
    });
    await compacted.setState(request.id, 'consumed');
    assert.deepEqual(compacted.boundAhead('In_Progress/a.vaultd-z-1-2-3.md'), []);
    await compacted.close();
  });
});
