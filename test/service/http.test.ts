import assert from 'node:assert/strict';
import { basename } from 'node:path';
import { readClaimedName } from '../../src/vault/claim.ts';
import { get, type IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { callBlock, note, startCli, type DaemonProcess } from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  killIfRunning,
  makeServiceVault,
  signalAndWait,
  waitForLog,
  type ServiceVault,
} from './helpers.ts';
import { parsePrometheusText, sampleValue } from './prometheus.ts';

/** One event read from the SSE stream. */
interface SseEvent {
  event: string;
  id: string;
  data: { seq: number; name: string; payload: Record<string, unknown> };
}

/** A minimal SSE client on `http.get`: parses `event:`, `id:` and `data:` lines. */
function openEventStream(url: string): Promise<{ events: SseEvent[]; close(): void }> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    const req = get(url, { headers: { accept: 'text/event-stream' } }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        reject(new Error(`GET /events: ${res.statusCode}`));
        return;
      }
      assert.match(String(res.headers['content-type']), /^text\/event-stream/);
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue; // heartbeat comment
            const colon = line.indexOf(':');
            if (colon < 0) continue;
            fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
          }
          if (fields['data'] === undefined) continue;
          events.push({
            event: fields['event'] ?? 'message',
            id: fields['id'] ?? '',
            data: JSON.parse(fields['data']) as SseEvent['data'],
          });
        }
      });
      resolve({ events, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

/** GET a URL; resolves with status, content type and body. */
function fetchText(url: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type']),
          body,
        }),
      );
    }).on('error', reject);
  });
}

describe('vaultd run: the HTTP listener', () => {
  let vault: ServiceVault;
  let daemon: DaemonProcess;
  let url: string;

  before(async () => {
    vault = await makeServiceVault({ extra: 'dashboard_interval_ms: 200\nhttp:\n  port: 0' });
    daemon = startCli(['run', '--config', vault.configPath]);
    await daemon.ready();
    const line = await waitForLog(daemon, /^HTTP listener:/);
    url = String(line['url']);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  after(async () => {
    await killIfRunning(daemon);
    await vault.cleanup();
  });

  it('GET /health says ready, watching and the queue depth', async () => {
    const res = await fetchText(`${url}/health`);
    assert.equal(res.status, 200);
    assert.match(res.type, /^application\/json/);
    const health = JSON.parse(res.body) as Record<string, unknown>;
    assert.equal(health['ready'], true);
    assert.equal(health['watching'], true);
    assert.equal(typeof health['queue_depth'], 'number');
  });

  it('GET /events streams the events of a note’s life in order', async () => {
    const stream = await openEventStream(`${url}/events`);
    try {
      await vault.drop('life.md', note('life', callBlock('slow_echo', { text: 'hi', ms: 50 })));
      const concerns = (e: SseEvent): boolean =>
        [e.data.payload['note'], e.data.payload['from']].some(
          // While claimed the note's name in In_Progress/ carries a claim tag.
          (n) => typeof n === 'string' && readClaimedName(basename(n)).original === 'life.md',
        );
      await waitFor(() => stream.events.some((e) => e.event === 'note.moved' && concerns(e)), {
        message: 'note.moved for life.md on the SSE stream',
      });
      const life = stream.events.filter(concerns);
      assert.deepEqual(
        life.map((e) => e.event),
        ['note.claimed', 'tool.call', 'tool.result', 'note.moved'],
      );
      for (const e of life) {
        assert.equal(e.data.name, e.event);
        assert.equal(e.id, String(e.data.seq));
      }
      const seqs = life.map((e) => e.data.seq);
      assert.deepEqual(
        seqs,
        [...seqs].sort((a, b) => a - b),
      );
      assert.match(String(life[0]?.data.payload['note']), /^In_Progress\/life\.vaultd-.*\.md$/);
      assert.equal(life[1]?.data.payload['tool'], 'slow_echo');
      const result = life[2]?.data.payload['result'] as { status: string; content: string };
      assert.equal(result.status, 'success');
      assert.equal(result.content, 'hi');
      assert.equal(life[3]?.data.payload['note'], 'Done/life.md');
      assert.equal(life[3]?.data.payload['state'], 'done');
    } finally {
      stream.close();
    }
  });

  it('GET /metrics is Prometheus text with calls by tool and status', async () => {
    await vault.drop('ok-1.md', note('ok', callBlock('slow_echo', { text: 'a' })));
    await vault.drop('ok-2.md', note('ok', callBlock('slow_echo', { text: 'b' })));
    await vault.drop('bad.md', note('bad', callBlock('slow_echo', { text: 7 })));
    for (const name of ['ok-1.md', 'ok-2.md']) {
      await waitFor(async () => (await vault.whereIs(name)) === 'Done');
    }
    await waitFor(async () => (await vault.whereIs('bad.md')) === 'Failed');

    const res = await fetchText(`${url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.type, /^text\/plain/);
    const families = parsePrometheusText(res.body);
    const calls = families.get('vaultd_tool_calls_total');
    assert.equal(calls?.type, 'counter');
    // Three successes: life.md from the test before and the two here.
    assert.equal(sampleValue(calls, { tool: 'slow_echo', status: 'success' }), 3);
    assert.equal(sampleValue(calls, { tool: 'slow_echo', status: 'error' }), 1);
    const latency = families.get('vaultd_tool_call_duration_seconds');
    assert.equal(latency?.type, 'histogram');
    assert.equal(
      sampleValue(latency, { tool: 'slow_echo' }, 'vaultd_tool_call_duration_seconds_count'),
      4,
    );
    assert.equal(families.get('vaultd_queue_depth')?.type, 'gauge');
    assert.equal(sampleValue(families.get('vaultd_pending_approvals'), {}), 0);
    // Notes per state are counted in the background, on the dashboard's timer.
    await waitFor(async () => {
      const notes = parsePrometheusText((await fetchText(`${url}/metrics`)).body).get(
        'vaultd_notes',
      );
      return (
        sampleValue(notes, { state: 'done' }) === 3 &&
        sampleValue(notes, { state: 'failed' }) === 1 &&
        sampleValue(notes, { state: 'inbox' }) === 0
      );
    });
  });

  it('closes the listener and exits 0 on SIGTERM with an SSE client connected', async () => {
    const stream = await openEventStream(`${url}/events`);
    try {
      assert.equal(await signalAndWait(daemon, 'SIGTERM'), 0);
      await assert.rejects(fetchText(`${url}/health`));
    } finally {
      stream.close();
    }
  });
});
