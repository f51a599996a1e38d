import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { scheduleCron } from '../../src/vault/schedule.ts';

describe('scheduleCron: clock-safe cron schedules', () => {
  // Timers run on the monotonic clock; the wall clock is this, moved by the tests on its own.
  let wall = 0;
  let jump = 0;
  const start = Date.parse('2026-11-24T10:00:00.500Z');
  const now = (): number => start + wall + jump;
  beforeEach(() => {
    wall = 0;
    jump = 0;
    mock.timers.enable({ apis: ['setTimeout'] });
  });
  afterEach(() => {
    mock.timers.reset();
  });
  /** Let `ms` pass on both clocks. */
  const pass = (ms: number): void => {
    for (let step = 0; step < ms; step += 500) {
      wall += Math.min(500, ms - step);
      mock.timers.tick(Math.min(500, ms - step));
    }
  };

  /** Let the scheduler's promise chain run after a timer fired. */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };

  it('runs at the matching seconds', async () => {
    let runs = 0;
    const schedule = scheduleCron('*/30 * * * * *', () => runs++, { now });
    pass(29_500);
    await settle();
    assert.equal(runs, 1, 'at :30');
    pass(30_000);
    await settle();
    assert.equal(runs, 2, 'at :00');
    schedule.stop();
  });

  it('runs once after the clock jumps 30 days forward, never replaying the missed slots', async () => {
    let runs = 0;
    const schedule = scheduleCron('*/30 * * * * *', () => runs++, { now });
    jump = 30 * 86_400_000;
    pass(29_500);
    await settle();
    assert.equal(runs, 1);
    pass(30_000);
    await settle();
    assert.equal(runs, 2, 'and goes on from the new time');
    schedule.stop();
  });

  it('goes on within a minute after the clock jumps 30 days back', async () => {
    let runs = 0;
    const schedule = scheduleCron('*/30 * * * * *', () => runs++, { maxSleepMs: 60_000, now });
    jump = -30 * 86_400_000;
    pass(60_000);
    await settle();
    pass(30_000);
    await settle();
    assert.ok(runs >= 1, `ran ${runs} times`);
    schedule.stop();
  });

  it('never overlaps a run still in progress, and reports a failing run', async () => {
    let runs = 0;
    let release: () => void = () => undefined;
    const errors: unknown[] = [];
    const schedule = scheduleCron(
      '* * * * * *',
      () => {
        runs++;
        if (runs === 2) throw new Error('boom');
        return new Promise<void>((resolve) => (release = resolve));
      },
      { onError: (error) => errors.push(error), now },
    );
    pass(500);
    await settle();
    pass(3000);
    await settle();
    assert.equal(runs, 1, 'the first run still holds');
    release();
    await settle();
    pass(1000);
    await settle();
    assert.equal(runs, 2);
    assert.equal(errors.length, 1);
    schedule.stop();
  });
});
