import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oneAtATime } from '../../src/protocol/one-at-a-time.ts';

test('calls during a pass make one more pass after it, and all share its promise', async () => {
  let passes = 0;
  let inFlight = 0;
  let release: (() => void) | undefined;
  const run = oneAtATime(async () => {
    inFlight++;
    assert.equal(inFlight, 1, 'never two passes at once');
    passes++;
    if (passes === 1) await new Promise<void>((resolve) => (release = resolve));
    inFlight--;
  });
  const first = run();
  const second = run();
  const third = run();
  assert.equal(second, first);
  assert.equal(third, first);
  release?.();
  await first;
  assert.equal(passes, 2, 'the calls during the first pass made one more, not two');
  await run();
  assert.equal(passes, 3, 'a call after the passes ended starts a new one');
});

test('a failing pass rejects its callers and does not stop later calls', async () => {
  let passes = 0;
  const run = oneAtATime(async () => {
    passes++;
    if (passes === 1) throw new Error('boom');
  });
  await assert.rejects(run(), /boom/);
  await run();
  assert.equal(passes, 2);
});
