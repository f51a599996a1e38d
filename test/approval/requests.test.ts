import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ApprovalRequests, REQUESTS_FILE } from '../../src/approval/requests.ts';

describe('ApprovalRequests', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-requests-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const call = { id: 'c1', name: 'danger_zone', arguments: { target: 'a', n: { y: 1, x: 2 } } };

  it('finds a recorded call by id, tool and arguments (key order does not count), nothing else', () => {
    const store = ApprovalRequests.open(join(dir, '.vaultd'));
    assert.equal(store.find(call), undefined);
    const at = new Date('2026-01-02T03:04:05.000Z');
    assert.equal(store.record(call, at).requested_at, at.toISOString());
    assert.equal(
      store.find({ ...call, arguments: { n: { x: 2, y: 1 }, target: 'a' } })?.requested_at,
      at.toISOString(),
    );
    assert.equal(store.find({ ...call, arguments: { target: 'b', n: { y: 1, x: 2 } } }), undefined);
    assert.equal(store.find({ ...call, name: 'other_tool' }), undefined);
    assert.equal(store.find({ ...call, id: 'c2' }), undefined);
    assert.equal(store.requestedAt('c1'), at.toISOString());
  });

  it('keeps the first request time when a call is recorded again, and survives a reopen', () => {
    const state = join(dir, '.vaultd');
    const first = ApprovalRequests.open(state).record(call, new Date('2026-01-01T00:00:00Z'));
    ApprovalRequests.open(state).record(call, new Date('2027-01-01T00:00:00Z'));
    const reopened = ApprovalRequests.open(state);
    assert.equal(reopened.find(call)?.requested_at, first.requested_at);
    assert.equal(readFileSync(join(state, REQUESTS_FILE), 'utf8').trim().split('\n').length, 1);
  });

  it('skips a torn or foreign line, and sees lines another writer added or a deleted file', () => {
    const state = join(dir, '.vaultd');
    const store = ApprovalRequests.open(state);
    store.record(call);
    appendFileSync(join(state, REQUESTS_FILE), 'not json\n{"id": "c9", "name": "x", "ar');
    const other = { id: 'c3', name: 'danger_zone', arguments: {} };
    ApprovalRequests.open(state).record(other);
    assert.ok(store.find(other), 'a change by another writer is read');
    assert.ok(store.find(call));
    rmSync(join(state, REQUESTS_FILE));
    assert.equal(store.find(call), undefined, 'a lost file only means asking again');
  });
});
