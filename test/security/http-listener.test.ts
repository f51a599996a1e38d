// Issue 14, attack 6 and the HTTP decision channel: the listener answers only loopback names
// (DNS rebinding), refuses browser origins, bounds connections, keeps a client whose replay is
// long, and its approvals API decides once, for a bearer token only.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  ROOT,
  startCli,
  type DaemonProcess,
  type TempVault,
} from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { readLines, waitInFolder, waitPending } from '../e2e/helpers.ts';

const TOKEN = 'api-token-for-tests-0123456789';

/** The paths the daemon's start-up line says its HTTP listener serves. */
function listedPaths(output: string): string | undefined {
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const msg = (JSON.parse(line) as { msg?: unknown }).msg;
    if (typeof msg === 'string' && msg.startsWith('HTTP listener: '))
      return msg.slice('HTTP listener: '.length);
  }
  return undefined;
}
const PLUGIN = join(ROOT, 'test/fixtures/plugins/test-tools.ts');

/** A raw HTTP/1.1 request, to send the Host and Origin headers a browser would. */
function raw(
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, headers, setHost: false },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

describe('HTTP listener and approvals API', { timeout: 120_000 }, () => {
  let vault: TempVault;
  let daemon: DaemonProcess;
  let port: number;
  let dangerLog: string;
  const local = (): Record<string, string> => ({ host: `127.0.0.1:${port}` });
  const auth = (): Record<string, string> => ({ ...local(), authorization: `Bearer ${TOKEN}` });

  before(async () => {
    vault = await makeVault();
    dangerLog = join(vault.root, 'danger.log');
    port = 20000 + Math.floor(Math.random() * 20000);
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) +
        [
          'http:',
          `  port: ${port}`,
          '  max_connections: 32',
          'plugins:',
          `  - ${PLUGIN}`,
          'tools:',
          '  danger_zone:',
          `    log: ${dangerLog}`,
          '',
        ].join('\n'),
    );
    daemon = startCli(['run', '--config', vault.configPath], { VAULTD_API_TOKEN: TOKEN });
    await daemon.ready();
  });
  after(async () => {
    await daemon.stop();
    await vault.cleanup();
  });

  it('says at start-up that it serves /approvals besides /health, /metrics and /events', () => {
    assert.equal(listedPaths(daemon.output()), '/health /metrics /events /approvals');
  });

  it('answers loopback names only: a rebound name gets 421 and nothing else', async () => {
    assert.equal((await raw(port, '/health', local())).status, 200);
    assert.equal((await raw(port, '/health', { host: `localhost:${port}` })).status, 200);
    const rebound = await raw(port, '/events', { host: `evil.example:${port}` });
    assert.equal(rebound.status, 421);
    assert.equal(rebound.body, '');
    assert.equal((await raw(port, '/health', { host: '127.0.0.1:1' })).status, 421, 'another port');
  });

  it('refuses requests a web page sends (an Origin header)', async () => {
    const fromPage = await raw(port, '/events', { ...local(), origin: 'https://evil.example' });
    assert.equal(fromPage.status, 403);
  });

  it('bounds connections: a flood of idle sockets neither exhausts descriptors nor stops the notes', async () => {
    const sockets: Socket[] = [];
    for (let i = 0; i < 300; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      sockets.push(socket);
    }
    await new Promise((r) => setTimeout(r, 300));
    const fds = readdirSync(`/proc/${daemon.child.pid}/fd`).length;
    assert.ok(fds < 200, `${fds} descriptors open`);
    await vault.drop(
      'during.md',
      note('During', callBlock('slow_echo', { text: 'still working' })),
    );
    await waitInFolder(vault, 'during.md', 'Done');
    for (const socket of sockets) socket.destroy();
    await waitFor(
      async () => (await raw(port, '/health', local()).catch(() => ({ status: 0 }))).status === 200,
    );
  });

  it('serves the events, which carry arguments and results, to holders of the token only', async () => {
    await vault.drop(
      'secret-args.md',
      note('Args', callBlock('slow_echo', { text: 'private text' })),
    );
    await waitInFolder(vault, 'secret-args.md', 'Done');
    const anyone = await raw(port, '/events', { ...local(), 'last-event-id': '0' });
    assert.equal(anyone.status, 401);
    assert.doesNotMatch(anyone.body, /private text/);
    const wrong = await raw(port, '/events', {
      ...local(),
      authorization: 'Bearer not-the-token',
      'last-event-id': '0',
    });
    assert.equal(wrong.status, 401);
    const chunks: string[] = [];
    const req = request(
      { host: '127.0.0.1', port, path: '/events', headers: { ...auth(), 'last-event-id': '0' } },
      (res) => res.on('data', (d: Buffer) => chunks.push(d.toString())),
    );
    req.end();
    await waitFor(() => chunks.join('').includes('private text'), {
      message: 'the token holder gets the events',
    });
    req.destroy();
  });

  it('keeps an event client whose replay is long, cutting the replay instead', async () => {
    for (let i = 0; i < 30; i++) {
      await vault.drop(
        `many-${i}.md`,
        note('Many', callBlock('slow_echo', { text: 'x'.repeat(40_000) })),
      );
    }
    await waitFor(
      async () => (await vault.list('Done')).filter((n) => n.startsWith('many-')).length === 30,
    );
    const chunks: string[] = [];
    const req = request(
      { host: '127.0.0.1', port, path: '/events', headers: { ...auth(), 'last-event-id': '0' } },
      (res) => {
        res.on('data', (d: Buffer) => chunks.push(d.toString()));
      },
    );
    req.end();
    await waitFor(() => chunks.join('').includes('replay.gap'), { message: 'a replay gap notice' });
    await vault.drop('later.md', note('Later', callBlock('slow_echo', { text: 'live' })));
    await waitFor(() => chunks.join('').includes('later.md'), {
      message: 'live events after the replay',
    });
    req.destroy();
  });

  it('lists and decides approvals for a bearer token only, once, with edited parameters', async () => {
    assert.equal((await raw(port, '/approvals', local())).status, 401);
    assert.equal(
      (await raw(port, '/approvals', { ...local(), authorization: 'Bearer wrong' })).status,
      401,
    );
    await vault.drop(
      'api.md',
      note('API', callBlock('danger_zone', { target: 'from-agent' }, 'api-1')),
    );
    await waitPending(vault, 'api.md');
    const listed = JSON.parse((await raw(port, '/approvals', auth())).body) as {
      approvals: { id: string; call_id: string; arguments: Record<string, unknown> }[];
    };
    const request1 = listed.approvals.find((a) => a.call_id === 'api-1');
    assert.ok(request1);
    assert.deepEqual(request1.arguments, { target: 'from-agent' });
    const path = `/approvals/${request1.id}/approve`;
    assert.equal(
      (await raw(port, path, { ...auth(), 'content-type': 'text/plain' }, 'POST', 'x')).status,
      415,
    );
    assert.equal(
      (
        await raw(
          port,
          path,
          { ...auth(), 'content-type': 'application/json' },
          'POST',
          'x'.repeat(70_000),
        )
      ).status,
      413,
    );
    const approved = await raw(
      port,
      path,
      { ...auth(), 'content-type': 'application/json' },
      'POST',
      JSON.stringify({ arguments: { target: 'edited-by-human' } }),
    );
    assert.equal(approved.status, 200, approved.body);
    const [result] = resultsOf(await waitInFolder(vault, 'api.md', 'Done'));
    assert.equal(result?.metadata['approved_by'], 'human-modified');
    assert.equal((result?.metadata['decided_by'] as Record<string, unknown>)['channel'], 'http');
    assert.deepEqual(await readLines(dangerLog), ['edited-by-human']);
    const again = await raw(
      port,
      path,
      { ...auth(), 'content-type': 'application/json' },
      'POST',
      '{}',
    );
    assert.equal(again.status, 409);
    assert.equal(
      (await raw(port, '/approvals/apr_aaaaaaaaaaaaaaaaaaaaaaaaaa/reject', auth(), 'POST')).status,
      404,
    );
  });
  it('decides a second call of a note while the first one runs: the note is never claimed twice', async () => {
    // QA replay: approve A, then reject B while A's note is claimed in In_Progress/. The reject
    // used to claim the note again from In_Progress/, under a second claim name: it ended in two
    // folders, one of them under its claim name, and A's result was lost from one of them.
    await vault.drop(
      'race.md',
      note(
        'Race',
        callBlock('danger_zone', { target: 'race-a', ms: 1500 }, 'race-a'),
        callBlock('danger_zone', { target: 'race-b' }, 'race-b'),
      ),
    );
    await waitPending(vault, 'race.md');
    const listed = JSON.parse((await raw(port, '/approvals', auth())).body) as {
      approvals: { id: string; call_id: string }[];
    };
    const idOf = (call: string): string => {
      const found = listed.approvals.find((a) => a.call_id === call);
      assert.ok(found, call);
      return found.id;
    };
    const json = { ...auth(), 'content-type': 'application/json' };
    const approved = await raw(port, `/approvals/${idOf('race-a')}/approve`, json, 'POST', '{}');
    assert.equal(approved.status, 200, approved.body);
    await waitFor(
      () => readdirSync(join(vault.root, 'In_Progress')).some((n) => n.startsWith('race.')),
      { message: 'race.md claimed' },
    );
    const rejected = await raw(
      port,
      `/approvals/${idOf('race-b')}/reject`,
      json,
      'POST',
      JSON.stringify({ reason: 'not now' }),
    );
    assert.equal(rejected.status, 200, rejected.body);
    const text = await waitInFolder(vault, 'race.md', 'Rejected');
    const results = resultsOf(text);
    assert.deepEqual(
      results.map((r) => [r.id, r.status]),
      [
        ['race-a', 'success'],
        ['race-b', 'rejected'],
      ],
    );
    // One note, under its own name, in one folder; A ran once.
    const everywhere = [
      'Needs_Action',
      'In_Progress',
      'Pending_Approval',
      'Approved',
      'Rejected',
      'Done',
      'Failed',
    ].flatMap((folder) =>
      readdirSync(join(vault.root, folder))
        .filter((n) => n.startsWith('race'))
        .map((n) => `${folder}/${n}`),
    );
    assert.deepEqual(everywhere, ['Rejected/race.md']);
    assert.deepEqual(
      (await readLines(dangerLog)).filter((l) => l.startsWith('race')),
      ['race-a'],
    );
  });

  /** The pending request of a call, as GET /approvals lists it (undefined once decided). */
  async function pendingOf(callId: string): Promise<{ id: string; state: string } | undefined> {
    const listed = JSON.parse((await raw(port, '/approvals', auth())).body) as {
      approvals: { id: string; call_id: string; state: string }[];
    };
    return listed.approvals.find((a) => a.call_id === callId);
  }

  it('refuses edited parameters the tool does not accept with 400 and keeps the call pending (review F4)', async () => {
    // The same edit ticked in the note keeps the call waiting; through the API it was recorded
    // (200, approved), and the call then failed with INVALID_PARAMS: the agent's call was lost.
    await vault.drop(
      'bad-edit.md',
      note('Bad edit', callBlock('danger_zone', { target: 'bad-edit-agent' }, 'bad-edit')),
    );
    await waitPending(vault, 'bad-edit.md');
    const request1 = await pendingOf('bad-edit');
    assert.ok(request1);
    const json = { ...auth(), 'content-type': 'application/json' };
    const path = `/approvals/${request1.id}/approve`;
    const refused = await raw(
      port,
      path,
      json,
      'POST',
      JSON.stringify({ arguments: { target: '' } }),
    );
    assert.equal(refused.status, 400, refused.body);
    assert.match(
      (JSON.parse(refused.body) as { error: string }).error,
      /edited arguments are not valid \(invalid parameters for danger_zone: .*target/,
    );
    const wrongType = await raw(
      port,
      path,
      json,
      'POST',
      JSON.stringify({ arguments: { target: 'x', ms: 'soon' } }),
    );
    assert.equal(wrongType.status, 400, wrongType.body);
    assert.equal((await pendingOf('bad-edit'))?.state, 'pending', 'still pending');
    assert.ok(
      (await vault.list('Pending_Approval')).includes('bad-edit.md'),
      'the note still waits',
    );
    // A valid edit afterwards is taken and runs.
    const approved = await raw(
      port,
      path,
      json,
      'POST',
      JSON.stringify({ arguments: { target: 'bad-edit-fixed' } }),
    );
    assert.equal(approved.status, 200, approved.body);
    const [result] = resultsOf(await waitInFolder(vault, 'bad-edit.md', 'Done'));
    assert.equal(result?.status, 'success');
    assert.deepEqual(
      (await readLines(dangerLog)).filter((l) => l.startsWith('bad-edit')),
      ['bad-edit-fixed'],
    );
  });

  it('refuses arguments nested deeper than tool_call parameters may be with 400, not 500 (review F6)', async () => {
    // 5,000 levels overflowed the stack where the decision was journalled (RangeError, 500).
    await vault.drop(
      'deep-edit.md',
      note('Deep edit', callBlock('danger_zone', { target: 'deep-edit-agent' }, 'deep-edit')),
    );
    await waitPending(vault, 'deep-edit.md');
    const request1 = await pendingOf('deep-edit');
    assert.ok(request1);
    const json = { ...auth(), 'content-type': 'application/json' };
    const depth = 5000;
    const body = `{"arguments":{"target":"x","ms":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    // Reject as well as approve: a reject's arguments are not checked against the tool, and were
    // journalled all the same.
    for (const decide of ['reject', 'approve']) {
      const deep = await raw(port, `/approvals/${request1.id}/${decide}`, json, 'POST', body);
      assert.equal(deep.status, 400, `${decide}: ${deep.body}`);
      assert.match(
        (JSON.parse(deep.body) as { error: string }).error,
        /nest more than 256 levels/,
        decide,
      );
      assert.equal((await pendingOf('deep-edit'))?.state, 'pending', `still pending (${decide})`);
    }
    const path = `/approvals/${request1.id}/approve`;
    const approved = await raw(port, path, json, 'POST', '{}');
    assert.equal(approved.status, 200, approved.body);
    await waitInFolder(vault, 'deep-edit.md', 'Done');
    assert.deepEqual(
      (await readLines(dangerLog)).filter((l) => l.startsWith('deep-edit')),
      ['deep-edit-agent'],
    );
  });
});

describe('HTTP approvals API without a token', { timeout: 60_000 }, () => {
  it('does not exist', async () => {
    const vault = await makeVault();
    const port = 20000 + Math.floor(Math.random() * 20000);
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')) + `http:\n  port: ${port}\n`,
    );
    const daemon = startCli(['run', '--config', vault.configPath], { VAULTD_API_TOKEN: '' });
    try {
      await daemon.ready();
      assert.equal(listedPaths(daemon.output()), '/health /metrics /events');
      const res = await raw(port, '/approvals', {
        host: `127.0.0.1:${port}`,
        authorization: 'Bearer anything',
      });
      assert.equal(res.status, 404);
    } finally {
      await daemon.stop();
      await vault.cleanup();
    }
  });
});

/** Start `vaultd run` with this token; its output once it exited, or a failure if it started. */
async function refusedStart(vault: TempVault, token: string): Promise<string> {
  const daemon = startCli(['run', '--config', vault.configPath], { VAULTD_API_TOKEN: token });
  const started = daemon.ready().then(() => 'started' as const);
  const outcome = await Promise.race([daemon.exited, started]);
  if (outcome === 'started') {
    await daemon.stop();
    assert.fail(`vaultd started:\n${daemon.output()}`);
  }
  assert.notEqual(outcome, 0);
  return daemon.output();
}

describe('HTTP listener off loopback', { timeout: 60_000 }, () => {
  // Bound to every interface without a token, /events gave every call's arguments and results to
  // any host on the network that sent a loopback Host header itself (review finding).
  it('refuses to start without a token, or with a short one, and starts with a token', async () => {
    const vault = await makeVault();
    const port = 20000 + Math.floor(Math.random() * 20000);
    try {
      await writeFile(
        vault.configPath,
        (await readFile(vault.configPath, 'utf8')) + `http:\n  port: ${port}\n  host: 0.0.0.0\n`,
      );
      const open = await refusedStart(vault, '');
      assert.match(
        open,
        /http\.host is 0\.0\.0\.0, which is not a loopback address, and VAULTD_API_TOKEN holds no token/,
      );
      assert.match(await refusedStart(vault, 'abc12'), /has 5 characters; use at least 16/);

      const daemon = startCli(['run', '--config', vault.configPath], { VAULTD_API_TOKEN: TOKEN });
      try {
        await daemon.ready();
        const res = await raw(port, '/events', { host: `127.0.0.1:${port}` });
        assert.equal(res.status, 401, 'the events need the token');
      } finally {
        await daemon.stop();
      }
    } finally {
      await vault.cleanup();
    }
  });
});
