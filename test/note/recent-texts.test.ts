import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RecentTexts } from '../../src/note/recent-texts.ts';

describe('RecentTexts', () => {
  it('finds a value by an equal text, not by the same string object', () => {
    const recent = new RecentTexts<number>(4, 1_000);
    const text = `${'a'.repeat(100)}${'b'.repeat(50)}`;
    recent.set(text, 1);
    assert.equal(recent.get(['a'.repeat(100), 'b'.repeat(50)].join('')), 1);
    assert.equal(recent.get(`${text}c`), undefined);
  });

  it('tells apart texts of one length whose fingerprints agree', () => {
    // 800 characters: the fingerprint reads 0, 100, …, 700 and the last 8. A change at 350 is
    // invisible to it, so only the full comparison can tell the two apart.
    const recent = new RecentTexts<string>(4, 10_000);
    const base = 'x'.repeat(800);
    const changed = `${base.slice(0, 350)}y${base.slice(351)}`;
    recent.set(base, 'base');
    assert.equal(recent.get(changed), undefined);
    recent.set(changed, 'changed');
    assert.equal(recent.get(changed), 'changed');
    assert.equal(recent.get(base), 'base');
    // Notes of one template differing only at their end: each finds its own.
    const notes = Array.from({ length: 4 }, (_, i) => `${base}\n<!-- run ${i} -->\n`);
    for (const [i, note] of notes.entries()) recent.set(note, `note ${i}`);
    for (const [i, note] of notes.entries()) assert.equal(recent.get(note.slice()), `note ${i}`);
  });

  it('keeps at most its entries and characters, dropping the oldest, and never an over-long text', () => {
    const recent = new RecentTexts<number>(2, 10);
    recent.set('one', 1);
    recent.set('two', 2);
    recent.set('six', 3);
    assert.equal(recent.get('one'), undefined);
    assert.equal(recent.get('two'), 2);
    recent.set('seven!!', 4); // 13 characters: 'two' goes, 'six' and 'seven!!' make 10
    assert.equal(recent.get('two'), undefined);
    assert.equal(recent.get('six'), 3);
    assert.equal(recent.get('seven!!'), 4);
    recent.set('eleven chars', 5);
    assert.equal(recent.get('eleven chars'), undefined);
    assert.equal(recent.get(''), undefined);
    recent.set('', 6);
    assert.equal(recent.get(''), 6);
  });

  it('keeps only the newest large text', () => {
    const recent = new RecentTexts<number>(8, 1_000, 100);
    const large = (c: string): string => c.repeat(150);
    recent.set('small one', 1);
    recent.set(large('a'), 2);
    recent.set('small two', 3);
    recent.set(large('b'), 4);
    assert.equal(recent.get(large('a')), undefined);
    assert.equal(recent.get(large('b')), 4);
    assert.equal(recent.get('small one'), 1);
    assert.equal(recent.get('small two'), 3);
    // A dropped text's characters are counted out: five large texts of 600 characters in turn
    // leave the small ones within the 1,000.
    for (const c of 'vwxyz') recent.set(c.repeat(600), 5);
    assert.equal(recent.get(large('b')), undefined);
    recent.set(large('c'), 6);
    assert.equal(recent.get('z'.repeat(600)), undefined);
    assert.equal(recent.get('small one'), 1);
    assert.equal(recent.get('small two'), 3);
    assert.equal(recent.get(large('c')), 6);
  });
});
