import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson } from '../../src/protocol/canonical-json.ts';
import { canonicalCall, deriveCallId } from '../../src/note/call-id.ts';
import { seededRandom as random } from '../helpers/random.ts';

// The definition the ids and hashes of every earlier version were made with: a copy whose objects
// are rebuilt with sorted keys, serialised by JSON.stringify. canonicalJson must give the same
// text for every value, or call ids and ledger hashes would change under notes already written.
function reference(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((key) => [key, sortKeys((v as Record<string, unknown>)[key])]),
    );
  };
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

// Keys chosen where the order rules meet: array indices (first, numerically) against other digit
// strings (sorted as text), the largest index and the first non-index, `__proto__`, case, unicode.
const KEYS = [
  '0',
  '1',
  '2',
  '10',
  '9',
  '01',
  '-1',
  '1.5',
  '1e3',
  ' 1',
  '4294967294',
  '4294967295',
  '99999999999',
  '__proto__',
  'constructor',
  'toString',
  'a',
  'B',
  'b',
  'ä',
  'Z',
  '',
  'name',
  'arguments',
  '\u{1f600}',
  '\ud800',
  'é',
  'tool_call',
];

function makeValue(rand: () => number, depth: number): unknown {
  const pick = Math.floor(rand() * (depth > 3 ? 7 : 10));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return [0, -0, 1.5, -3, 1e21, 1e-7, 2 ** 53, Number.MAX_VALUE, 5e-324, 123456789.125][
        Math.floor(rand() * 10)
      ];
    case 3:
      return [
        '',
        'hello',
        'quote " and \\ back',
        'line\nbreak\t',
        '\u0000\u001f',
        '\ud800',
        '日本',
        '\u2028',
      ][Math.floor(rand() * 8)];
    case 4:
      return undefined;
    case 5:
      return KEYS[Math.floor(rand() * KEYS.length)];
    case 6:
      return Math.floor(rand() * 1000) - 500;
    case 7: {
      const items: unknown[] = [];
      const n = Math.floor(rand() * 5);
      for (let i = 0; i < n; i++) items.push(makeValue(rand, depth + 1));
      return items;
    }
    default: {
      // Built key by key in a random order, as JSON.parse and agents build them.
      const entries: [string, unknown][] = [];
      const n = Math.floor(rand() * 7);
      for (let i = 0; i < n; i++) {
        entries.push([
          KEYS[Math.floor(rand() * KEYS.length)] as string,
          makeValue(rand, depth + 1),
        ]);
      }
      return Object.fromEntries(entries);
    }
  }
}

describe('canonicalJson', () => {
  it('gives the same text as the sorted copy on 20,000 random values', () => {
    const rand = random(15);
    for (let i = 0; i < 20_000; i++) {
      const value = makeValue(rand, 0);
      assert.equal(canonicalJson(value), reference(value), `value ${i}`);
      // A call's text, written without the {name, arguments} object.
      assert.equal(
        canonicalCall('tool_name', value),
        reference({ name: 'tool_name', arguments: value }),
        `call ${i}`,
      );
      // The same value after a trip through JSON text, as calls reach it from a note.
      const text = JSON.stringify(value);
      if (text !== undefined) {
        const parsed: unknown = JSON.parse(text);
        assert.equal(canonicalJson(parsed), reference(parsed), `parsed value ${i}`);
      }
    }
  });

  it('orders array indices numerically before every other key, as objects do', () => {
    const value = JSON.parse(
      '{"b": 1, "10": 2, "2": 3, "01": 4, "4294967295": 5, "4294967294": 6, "a": 7, "-1": 8}',
    ) as unknown;
    const expected = '{"2":3,"10":2,"4294967294":6,"-1":8,"01":4,"4294967295":5,"a":7,"b":1}';
    assert.equal(canonicalJson(value), expected);
    assert.equal(reference(value), expected);
  });

  it('sorts objects of many keys, and keys an exotic object lists in any order', () => {
    const rand = random(36);
    for (let i = 0; i < 2_000; i++) {
      // Up to 40 keys: past the few that are sorted by insertion.
      const entries: [string, unknown][] = [];
      const n = Math.floor(rand() * 40);
      for (let k = 0; k < n; k++) {
        const key =
          rand() < 0.7
            ? (KEYS[Math.floor(rand() * KEYS.length)] as string)
            : `k${Math.floor(rand() * 100)}`;
        entries.push([key, k]);
      }
      const value = Object.fromEntries(entries);
      assert.equal(canonicalJson(value), reference(value), `object ${i}`);
      // A proxy lists its keys in whatever order its trap gives: here reversed.
      const keys = Object.keys(value).reverse();
      const proxy = new Proxy(value, { ownKeys: () => keys });
      assert.equal(canonicalJson(proxy), reference(proxy), `proxy ${i}`);
    }
  });

  it('keeps the edge cases of the sorted copy: toJSON, holes, undefined, non-finite numbers', () => {
    const cases: unknown[] = [
      undefined,
      () => 1,
      Symbol('s'),
      NaN,
      -Infinity,
      [undefined, () => 1, , 3], // eslint-disable-line no-sparse-arrays
      { a: undefined, b: () => 1, c: Symbol('s'), d: 1 },
      new Date(0),
      { when: new Date(0), own: { toJSON: () => 'own' } },
      { gone: { toJSON: () => undefined }, kept: [{ toJSON: () => undefined }], b: 1 },
      JSON.parse('{"__proto__": {"x": 1}, "a": [1, {"z": 0, "y": 1}]}') as unknown,
      new String('ab'),
      new Number(5),
      Object.assign(Object.create({ inherited: 1 }) as object, { own: 2 }),
    ];
    for (const value of cases) assert.equal(canonicalJson(value), reference(value));
    assert.throws(() => canonicalJson(10n), TypeError);
  });

  it('writes a value whose keys are already in order as the sorted copy does (one JSON.stringify)', () => {
    const rand = random(54);
    for (let i = 0; i < 20_000; i++) {
      // The sorted copy read back: every object's keys in canonical order, at every depth, the
      // way most calls arrive (the fast path); the unsorted value next to it takes the other.
      const value = makeValue(rand, 0);
      const text = reference(value);
      const sorted: unknown = JSON.parse(text);
      assert.equal(canonicalJson(sorted), text, `sorted value ${i}`);
      assert.equal(canonicalCall('t', sorted), reference({ name: 't', arguments: sorted }));
    }
    // In canonical order, yet JSON.stringify alone would write them otherwise: a boxed string
    // (JSON.stringify writes "x", the copy {"0":"x"}), an array with its own toJSON, a class
    // instance's toJSON, a prototype-less object; and a value 100 objects deep.
    let deep: unknown = { a: 1 };
    for (let i = 0; i < 100; i++) deep = { a: deep, b: [i] };
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
      toJSON(): string {
        return 'point';
      }
    }
    const cases: unknown[] = [
      { a: new String('x'), b: 1 },
      { a: Object.assign([1, 2], { toJSON: () => 'array' }) },
      [new Point(1, 2)],
      { a: Object.create(null, { b: { value: 1, enumerable: true } }) as unknown },
      deep,
    ];
    for (const value of cases) assert.equal(canonicalJson(value), reference(value));
  });

  it('keeps the derived call ids of notes already written', () => {
    // Pinned: a change here changes the id of every call without an explicit id.
    assert.equal(
      deriveCallId('search_web', { query: 'agents', num_results: 5 }, 0),
      deriveCallId('search_web', { num_results: 5, query: 'agents' }, 0),
    );
    // Made by the sorted-copy implementation before this one.
    assert.equal(
      deriveCallId('search_web', { query: 'agents', num_results: 5 }, 0),
      'call_84b0301be1ba',
    );
    assert.equal(
      deriveCallId('search_web', { query: 'agents', num_results: 5 }, 1),
      'call_728ae9934b74',
    );
    assert.equal(
      canonicalJson({ name: 'search_web', arguments: { query: 'agents', num_results: 5 } }),
      '{"arguments":{"num_results":5,"query":"agents"},"name":"search_web"}',
    );
  });
});
