// Entry of the worker thread that parses and edits large notes (see off-thread.ts).
import { parentPort } from 'node:worker_threads';
import { runNoteJob, type NoteJob } from './worker-ops.ts';

parentPort?.on('message', (message: { id: number; job: NoteJob }) => {
  try {
    parentPort?.postMessage({ id: message.id, ok: true, value: runNoteJob(message.job) });
  } catch (error) {
    parentPort?.postMessage({
      id: message.id,
      ok: false,
      error: (error as Error)?.message ?? String(error),
    });
  }
});

// Tell the parent the modules are loaded: job deadlines start from here.
parentPort?.postMessage({ ready: true });
