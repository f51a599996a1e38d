import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
});
