// Tools for `npm run bench` only: the harness names this module in the `plugins` key of the temp
// vault's config, exactly as a user's own tools are loaded (compiled to JavaScript first, as a
// published plugin would be, so the daemon does not start tsx for it). Never part of a normal run.
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from 'vaultd';

let inFlight = 0;
let maxInFlight = 0;

/** Returns `text` at once: the cheapest possible in-process tool. Safe and read-only. */
export const benchEcho = defineTool<{ text: string }>({
  name: 'bench_echo',
  description: 'Return text at once (benchmark tool).',
  parameters: { text: { type: 'string', description: 'what to return' } },
  required: ['text'],
  safety: 'safe',
  readOnly: true,
  handler: (args) => args.text,
});

/**
 * Sleeps `ms` (honouring the abort signal) and reports how many calls were in flight: each start
 * appends the count to the file named by `tools.bench_sleep.stats`, when set. Safe and read-only
 * (no ledger intent); give each call a distinct `tag` so the result cache cannot answer it.
 */
export const benchSleep = defineTool<{ ms: number; tag: string }>({
  name: 'bench_sleep',
  description: 'Sleep ms milliseconds (benchmark tool).',
  parameters: {
    ms: { type: 'integer', minimum: 0, maximum: 60_000, description: 'how long to sleep' },
    tag: { type: 'string', description: 'makes the call unique' },
  },
  required: ['ms', 'tag'],
  safety: 'safe',
  readOnly: true,
  async handler(args, ctx) {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const stats = ctx.config['stats'];
    if (typeof stats === 'string') appendFileSync(stats, `${inFlight}\n`);
    try {
      await sleep(args.ms, undefined, { signal: ctx.signal });
    } finally {
      inFlight--;
    }
    return { tag: args.tag, in_flight_max: maxInFlight };
  },
});

export default [benchEcho, benchSleep];
