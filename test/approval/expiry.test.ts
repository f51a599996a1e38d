import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isExpired, parseDuration } from '../../src/approval/expiry.ts';

describe('parseDuration', () => {
  const table: [string | number, number][] = [
    ['7d', 604_800_000],
    ['12h', 43_200_000],
    ['30m', 1_800_000],
    ['45s', 45_000],
    ['500ms', 500],
    ['2w', 1_209_600_000],
    ['1.5h', 5_400_000],
    ['1h30m', 5_400_000],
    [' 1h 30m ', 5_400_000],
    ['250', 250],
    [1000, 1000],
    ['0s', 0],
  ];
  for (const [text, ms] of table) {
    it(`${JSON.stringify(text)} is ${ms} ms`, () => assert.equal(parseDuration(text), ms));
  }
  for (const bad of ['', 'd', '7 days', '7x', '-1h', 'h7', '1h-', Number.NaN, -5]) {
    it(`rejects ${JSON.stringify(bad)} with a message quoting it`, () => {
      assert.throws(
        () => parseDuration(bad),
        (error: unknown) =>
          error instanceof RangeError && error.message.startsWith(JSON.stringify(bad)),
      );
    });
  }
});

describe('isExpired', () => {
  const at = '2026-11-21T10:00:00.000Z';
  const t = Date.parse(at);
  it('is false before the deadline and true from it on', () => {
    assert.equal(isExpired(at, 1000, t + 999), false);
    assert.equal(isExpired(at, 1000, t + 1000), true);
    assert.equal(isExpired(at, parseDuration('7d'), t + parseDuration('6d')), false);
    assert.equal(isExpired(at, parseDuration('7d'), t + parseDuration('8d')), true);
  });
  it('treats an unreadable time as expired', () => {
    assert.equal(isExpired('not a date', 1000, t), true);
  });
  it('uses the clock by default', () => {
    assert.equal(isExpired(new Date().toISOString(), 3_600_000), false);
    assert.equal(isExpired('2000-01-01T00:00:00Z', 1000), true);
  });
});
