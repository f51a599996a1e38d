// Entry of the worker thread that parses and edits large notes (see off-thread.ts).
import { parentPort } from 'node:worker_threads';
import type { ToolResult } from '../protocol/types.ts';
import { readApprovalSection } from '../approval/section-parse.ts';
import { parseNote } from './find-calls.ts';
import { packEdit, splitParse, type ParsePart } from './transfer.ts';
import type { ParsedNote } from './types.ts';
import { applyWriteBack, type NoteJob } from './worker-ops.ts';

// The results of a large edit arrive in parts before the edit itself (see off-thread.ts).
const parts = new Map<number, ToolResult[]>();
// A large parse goes out one part at a time, the next when the main thread asks for it.
const outgoing = new Map<number, { readonly head: ParsedNote; readonly parts: ParsePart[] }>();

type Message =
  | { readonly id: number; readonly part: readonly ToolResult[] }
  | { readonly id: number; readonly next: true }
  | { readonly id: number; readonly job: NoteJob; readonly parts?: true };

function sendNext(id: number): void {
  const split = outgoing.get(id);
  if (split === undefined) return;
  const part = split.parts.shift();
  if (part !== undefined) {
    parentPort?.postMessage({ id, part });
    return;
  }
  outgoing.delete(id);
  parentPort?.postMessage({ id, ok: true, value: split.head, parts: true });
}

parentPort?.on('message', (message: Message) => {
  if ('part' in message) {
    let list = parts.get(message.id);
    if (list === undefined) parts.set(message.id, (list = []));
    for (const result of message.part) list.push(result);
    return;
  }
  if ('next' in message) {
    sendNext(message.id);
    return;
  }
  let job = message.job;
  if (message.parts === true && job.op === 'edit') {
    job = { ...job, edit: { ...job.edit, results: parts.get(message.id) ?? [] } };
    parts.delete(message.id);
  }
  try {
    if (job.op === 'parse') {
      const parsed = parseNote(job.text);
      const split = splitParse(parsed);
      if (split === null) {
        parentPort?.postMessage({ id: message.id, ok: true, value: parsed });
      } else {
        outgoing.set(message.id, split);
        sendNext(message.id);
      }
    } else if (job.op === 'approval') {
      const value = readApprovalSection(job.text, job.maxCalls);
      parentPort?.postMessage({ id: message.id, ok: true, value });
    } else {
      const packed = packEdit(job.text, applyWriteBack(job.text, job.edit));
      parentPort?.postMessage({ id: message.id, ok: true, value: packed }, [
        packed.bytes.buffer as ArrayBuffer,
      ]);
    }
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
