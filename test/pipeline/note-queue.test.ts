import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NoteQueue, type JobOutcome } from '../../src/pipeline/note-queue.ts';

/** A worker whose jobs wait until released, recording every start. */
function gatedWorker(): {
  starts: string[];
  release(path: string): void;
  worker: (path: string) => Promise<JobOutcome>;
} {
  const starts: string[] = [];
  const gates = new Map<string, () => void>();
  return {
    starts,
    release(path) {
      const open = gates.get(path);
      assert.ok(open, `${path} is running`);
      gates.delete(path);
      open();
    },
    worker(path) {
      starts.push(path);
      return new Promise<JobOutcome>((resolve) => gates.set(path, () => resolve()));
    },
  };
}

const noError = (path: string, error: unknown): void => {
  throw new Error(`${path}: ${String(error)}`);
};

describe('NoteQueue', () => {
  it('looks again at a note that had an event while it ran, when the path still names a file', async () => {
    const gated = gatedWorker();
    const queue = new NoteQueue(4, gated.worker, noError, () => true);
    queue.add('/v/inbox/a.md', 'inbox', 'rename');
    queue.add('/v/inbox/a.md', 'inbox', 'change'); // while running: coalesced into one more look
    queue.add('/v/inbox/a.md', 'inbox', 'change');
    assert.deepEqual(gated.starts, ['/v/inbox/a.md']);
    gated.release('/v/inbox/a.md');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(gated.starts, ['/v/inbox/a.md', '/v/inbox/a.md']);
    gated.release('/v/inbox/a.md');
    await queue.idle();
    assert.equal(queue.depth, 0);
  });

  it('does not look again when the event was the note leaving (its path names nothing now)', async () => {
    const gated = gatedWorker();
    const there = new Set(['/v/inbox/b.md']);
    const queue = new NoteQueue(4, gated.worker, noError, (path) => there.has(path));
    queue.add('/v/inbox/b.md', 'inbox', 'rename');
    // The job claims the note (renames it away); the watcher hears that rename while it runs.
    there.delete('/v/inbox/b.md');
    queue.add('/v/inbox/b.md', 'inbox', 'rename');
    gated.release('/v/inbox/b.md');
    await queue.idle();
    assert.deepEqual(gated.starts, ['/v/inbox/b.md']);
    assert.equal(queue.depth, 0);
    // A new note dropped under the same name later is looked at as usual.
    there.add('/v/inbox/b.md');
    queue.add('/v/inbox/b.md', 'inbox', 'rename');
    assert.deepEqual(gated.starts, ['/v/inbox/b.md', '/v/inbox/b.md']);
    gated.release('/v/inbox/b.md');
    await queue.idle();
  });

  it('works on at most `limit` notes at once and starts the next as one ends', async () => {
    const gated = gatedWorker();
    const queue = new NoteQueue(2, gated.worker, noError);
    for (const name of ['1', '2', '3']) queue.add(`/v/inbox/${name}.md`, 'inbox', 'rename');
    assert.deepEqual(gated.starts, ['/v/inbox/1.md', '/v/inbox/2.md']);
    assert.equal(queue.depth, 3);
    gated.release('/v/inbox/1.md');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(gated.starts, ['/v/inbox/1.md', '/v/inbox/2.md', '/v/inbox/3.md']);
    gated.release('/v/inbox/2.md');
    gated.release('/v/inbox/3.md');
    await queue.idle();
    assert.equal(queue.depth, 0);
  });
});
