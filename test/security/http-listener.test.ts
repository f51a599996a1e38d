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
import { loadSetup } from '../../src/cli/setup.ts';
import { startDaemon } from '../../src/daemon.ts';
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

describe('HTTP approvals API while the note is claimed (review F1)', { timeout: 60_000 }, () => {
  // Review finding F1: a decision that came while the request's note was still claimed in
  // In_Progress/ (vaultd had just asked; a slow call of the same note still ran) queued
  // Pending_Approval/<name>, where the note was not yet, and the approved call waited for the next
  // reconcile scan or approval.check_cron tick, although the API had answered 200. Only the
  // watcher's event for the note landing there could save it, when it came late enough.

  /** A vault with the test tools, the listener on `port` and scans that run once a year. */
  async function rareScanVault(port: number, tokenEnv?: string): Promise<TempVault> {
    const vault = await makeVault();
    const rare = "'0 0 0 1 1 *'";
    await writeFile(
      vault.configPath,
      (await readFile(vault.configPath, 'utf8')).replace(
        "reconcile_cron: '*/2 * * * * *'",
        `reconcile_cron: ${rare}`,
      ) +
        [
          'approval:',
          `  check_cron: ${rare}`,
          'http:',
          `  port: ${port}`,
          ...(tokenEnv === undefined ? [] : [`  api_token_env: ${tokenEnv}`]),
          'plugins:',
          `  - ${PLUGIN}`,
          'tools:',
          '  danger_zone:',
          `    log: ${join(vault.root, 'danger.log')}`,
          '  side_effect:',
          `    log: ${join(vault.root, 'side.log')}`,
          '',
        ].join('\n'),
    );
    return vault;
  }

  /** A note whose dangerous call is asked about while its slow cautious call keeps it claimed. */
  const claimedNote = note(
    'Claimed',
    callBlock('danger_zone', { target: 'claimed-danger' }, 'claimed-danger'),
    callBlock('side_effect', { label: 'claimed-slow', ms: 3000 }, 'claimed-slow'),
  );

  /**
   * Wait for the dangerous call's request, check its note is the claim in In_Progress/, and
   * approve it through the API while the slow call has not ended.
   */
  async function approveWhileClaimed(vault: TempVault, port: number): Promise<void> {
    const auth = { host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}` };
    const request1 = await waitFor(
      async () => {
        const listed = JSON.parse((await raw(port, '/approvals', auth)).body) as {
          approvals: { id: string; call_id: string; note: string }[];
        };
        return listed.approvals.find((a) => a.call_id === 'claimed-danger');
      },
      { message: 'the request listed', intervalMs: 10 },
    );
    assert.match(request1.note, /^In_Progress\/claimed\.vaultd-.*\.md$/);
    const approved = await raw(
      port,
      `/approvals/${request1.id}/approve`,
      { ...auth, 'content-type': 'application/json' },
      'POST',
      '{}',
    );
    assert.equal(approved.status, 200, approved.body);
    // Decided before the slow call ended: the note was still claimed.
    const side = await readLines(join(vault.root, 'side.log'));
    assert.ok(!side.includes('end claimed-slow'), side.join(', '));
    assert.ok(
      readdirSync(join(vault.root, 'In_Progress')).some((n) => n.startsWith('claimed.')),
      'still claimed when approved',
    );
  }

  /** The note is in Done/ with both calls run once. */
  async function ranOnce(vault: TempVault, text: string): Promise<void> {
    assert.deepEqual(
      resultsOf(text).map((r) => [r.id, r.status]),
      [
        ['claimed-danger', 'success'],
        ['claimed-slow', 'success'],
      ],
    );
    assert.deepEqual(await readLines(join(vault.root, 'danger.log')), ['claimed-danger']);
    assert.deepEqual(await readLines(join(vault.root, 'side.log')), [
      'start claimed-slow',
      'end claimed-slow',
    ]);
  }

  it('runs a call approved while its note is in In_Progress/ once the note lands, scans rare', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const vault = await rareScanVault(port);
    const daemon = startCli(['run', '--config', vault.configPath], { VAULTD_API_TOKEN: TOKEN });
    try {
      await daemon.ready();
      await vault.drop('claimed.md', claimedNote);
      await approveWhileClaimed(vault, port);
      await ranOnce(vault, await waitInFolder(vault, 'claimed.md', 'Done', 10_000));
    } finally {
      await daemon.stop();
      await vault.cleanup();
    }
  });

  it('queues the note itself, without the watcher or a scan to find it', async () => {
    // Without watching (as `vaultd once` runs) nothing but the daemon's own queueing can look at
    // the note again: the outcome does not depend on when the watcher's event comes.
    const port = 20000 + Math.floor(Math.random() * 20000);
    const tokenEnv = 'VAULTD_TEST_F1_TOKEN';
    const vault = await rareScanVault(port, tokenEnv);
    process.env[tokenEnv] = TOKEN;
    const { config, packs, registry } = await loadSetup({ config: vault.configPath });
    await vault.drop('claimed.md', claimedNote);
    const daemon = await startDaemon({ config, packs, registry, watch: false });
    try {
      await approveWhileClaimed(vault, port);
      await daemon.idle();
      assert.equal(await vault.whereIs('claimed.md'), 'Done');
      await ranOnce(vault, await vault.read('Done', 'claimed.md'));
    } finally {
      await daemon.stop();
      delete process.env[tokenEnv];
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
  // A listener refused as configured is a bad config: exit 2, which systemd does not restart
  // (RestartPreventExitStatus=2), instead of a restart every few seconds for ever.
  assert.equal(outcome, 2, daemon.output());
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
