import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallBudget, mentionsOfToolCall } from '../../src/pipeline/call-budget.ts';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('CallBudget', () => {
  it('grants shares that fit at once, and the rest in the order asked as shares come back', async () => {
    const budget = new CallBudget(100);
    const order: string[] = [];
    const a = await budget.acquire(60);
    const b = budget.acquire(60).then((release) => (order.push('b'), release));
    const c = budget.acquire(30).then((release) => (order.push('c'), release));
    await tick();
    assert.deepEqual(order, [], 'b does not fit, and c does not pass it');
    assert.equal(budget.used, 60);
    a();
    const releaseB = await b;
    const releaseC = await c;
    assert.deepEqual(order, ['b', 'c']);
    assert.equal(budget.used, 90);
    releaseB();
    releaseB();
    releaseC();
    assert.equal(budget.used, 0, 'a share is given back once');
  });

  it('lets a note heavier than the whole budget run, alone', async () => {
    const budget = new CallBudget(100);
    const small = await budget.acquire(10);
    let heavyRuns = false;
    const heavy = budget.acquire(5_000).then((release) => ((heavyRuns = true), release));
    await tick();
    assert.equal(heavyRuns, false);
    small();
    const release = await heavy;
    assert.equal(budget.used, 100);
    let next = false;
    const after = budget.acquire(1).then((r) => ((next = true), r));
    await tick();
    assert.equal(next, false, 'nothing runs beside it');
    release();
    (await after)();
    assert.equal(budget.used, 0);
  });
});

describe('mentionsOfToolCall', () => {
  it('counts the times a note says tool_call, up to a limit', () => {
    const call = '```json\n{"tool_call": {"name": "x"}}\n```\n';
    assert.equal(mentionsOfToolCall('', 10), 0);
    assert.equal(mentionsOfToolCall(call.repeat(7), 100), 7);
    assert.equal(mentionsOfToolCall(call.repeat(7), 5), 5);
    assert.equal(mentionsOfToolCall('tool_calltool_call', 10), 2);
  });
});
