import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventBus, type AnyBusEvent } from '../../src/observe/event-bus.ts';
import { captureLogger } from './helpers.ts';

const claimed = (note: string) => ({ note, from: 'Needs_Action' });

describe('EventBus', () => {
  it('delivers every event to subscribers in emit order with seq, name, payload and time', () => {
    const bus = new EventBus();
    const seen: AnyBusEvent[] = [];
    bus.subscribe((e) => seen.push(e));
    bus.emit('note.claimed', claimed('a.md'));
    bus.emit('daemon.state', { state: 'ready' });
    assert.deepEqual(
      seen.map((e) => [e.seq, e.name]),
      [
        [1, 'note.claimed'],
        [2, 'daemon.state'],
      ],
    );
    assert.deepEqual(seen[0]?.payload, claimed('a.md'));
    assert.ok(!Number.isNaN(Date.parse(seen[0]?.at ?? '')));
    assert.equal(bus.lastSeq, 2);
  });

  it('on() receives only its event name and off() or the returned function removes it', () => {
    const bus = new EventBus();
    const notes: string[] = [];
    const handler = (p: { note: string }) => notes.push(p.note);
    bus.on('note.claimed', handler);
    const stop = bus.on('note.moved', (p) => notes.push(`moved ${p.note}`));
    bus.emit('note.claimed', claimed('a.md'));
    bus.emit('daemon.state', { state: 'ready' });
    bus.emit('note.moved', { note: 'a.md', from: 'In_Progress', to: 'Done', state: 'done' });
    bus.off('note.claimed', handler);
    stop();
    bus.emit('note.claimed', claimed('b.md'));
    bus.emit('note.moved', { note: 'b.md', from: 'In_Progress', to: 'Done', state: 'done' });
    assert.deepEqual(notes, ['a.md', 'moved a.md']);
    assert.equal(bus.listenerCount, 0);
  });

  it('one handler may listen to several names and adding it twice for one name delivers once', () => {
    const bus = new EventBus();
    const names: string[] = [];
    const handler = (_p: unknown, e: { name: string }) => names.push(e.name);
    bus.on('note.claimed', handler);
    bus.on('note.claimed', handler);
    bus.on('daemon.state', handler);
    bus.emit('note.claimed', claimed('a.md'));
    bus.emit('daemon.state', { state: 'ready' });
    bus.off('note.claimed', handler);
    bus.emit('note.claimed', claimed('b.md'));
    bus.emit('daemon.state', { state: 'draining' });
    assert.deepEqual(names, ['note.claimed', 'daemon.state', 'daemon.state']);
  });

  it('logs a throwing or rejecting listener and still delivers to the others', async () => {
    const { logger, records } = captureLogger();
    const bus = new EventBus({ logger });
    const seen: number[] = [];
    bus.subscribe(() => {
      throw new Error('boom');
    });
    bus.subscribe((async () => {
      throw new Error('async boom');
    }) as unknown as () => void);
    bus.subscribe((e) => seen.push(e.seq));
    assert.doesNotThrow(() => bus.emit('daemon.state', { state: 'ready' }));
    assert.deepEqual(seen, [1]);
    await new Promise((resolve) => setImmediate(resolve));
    const failures = records.filter((r) => r['msg'] === 'event listener failed');
    assert.equal(failures.length, 2);
    assert.deepEqual(failures.map((r) => (r['err'] as { message: string }).message).sort(), [
      'async boom',
      'boom',
    ]);
  });

  it('delivers events emitted from inside a listener after the current one, to everyone in seq order', () => {
    const bus = new EventBus();
    const first: number[] = [];
    const second: number[] = [];
    bus.subscribe((e) => {
      first.push(e.seq);
      if (e.name === 'note.claimed') bus.emit('daemon.state', { state: 'ready' });
    });
    bus.subscribe((e) => second.push(e.seq));
    bus.emit('note.claimed', claimed('a.md'));
    assert.deepEqual(first, [1, 2]);
    assert.deepEqual(second, [1, 2]);
  });

  it('a listener that unsubscribes itself during an emit does not disturb the others', () => {
    const bus = new EventBus();
    const seen: string[] = [];
    const stop = bus.subscribe(() => {
      seen.push('once');
      stop();
    });
    bus.subscribe(() => seen.push('always'));
    bus.emit('daemon.state', { state: 'ready' });
    bus.emit('daemon.state', { state: 'draining' });
    assert.deepEqual(seen, ['once', 'always', 'always']);
  });

  it('keeps the last historySize events for replay and says when older ones were dropped', () => {
    const bus = new EventBus({ historySize: 3 });
    for (let i = 1; i <= 5; i += 1) bus.emit('note.claimed', claimed(`${i}.md`));
    const all = bus.since(0);
    assert.deepEqual(
      all.events.map((e) => e.seq),
      [3, 4, 5],
    );
    assert.equal(all.complete, false);
    assert.deepEqual(
      bus.since(2).events.map((e) => e.seq),
      [3, 4, 5],
    );
    assert.equal(bus.since(2).complete, true);
    assert.deepEqual(bus.since(5), { events: [], complete: true });
  });

  it('counts events without listeners or history and rejects a bad history size', () => {
    const bus = new EventBus({ historySize: 0 });
    bus.emit('daemon.state', { state: 'ready' });
    assert.equal(bus.lastSeq, 1);
    assert.deepEqual(bus.since(0).events, []);
    assert.throws(() => new EventBus({ historySize: -1 }), /historySize/);
  });
});
