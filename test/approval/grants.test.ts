import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GrantStore,
  GrantsFileError,
  compileGrant,
  pinnedRule,
  toolIdentity,
  type ToolIdentity,
} from '../../src/approval/grants.ts';
import { matchesRule } from '../../src/approval/policy.ts';

describe('GrantStore', () => {
  let root: string;
  let stateDir: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vaultd-grants-'));
    stateDir = join(root, '.vaultd');
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('keeps a revoke made while another process adds a grant (review finding)', async () => {
    // The daemon and `vaultd grants revoke` each read the file, changed it and wrote it whole:
    // the revoke was reported done, and the daemon's write, made from the file as it was before,
    // brought the revoked grant back. Two stores stand for the two processes.
    await GrantStore.open(stateDir).add('shell_exec', { by: 'alice', channel: 'cli' });
    const daemon = GrantStore.open(stateDir);
    const cli = GrantStore.open(stateDir);
    for (let round = 0; round < 20; round++) {
      const adding = daemon.add(`write_file(path:Notes/${round}*)`, { by: 'human' });
      const removed = cli.revoke('shell_exec');
      await adding;
      assert.equal(await removed, round === 0 ? 1 : 0);
      const rules = GrantStore.open(stateDir)
        .list()
        .map((g) => g.rule);
      assert.ok(!rules.includes('shell_exec'), `round ${round}: ${rules.join(', ')}`);
      assert.ok(rules.includes(`write_file(path:Notes/${round}*)`));
    }
    assert.deepEqual(await readdir(stateDir), ['grants.json']);
  });

  it('takes over a grants lock left by a process that is gone', async () => {
    const { pid } = spawnSync(process.execPath, ['-e', '0']);
    const store = GrantStore.open(stateDir);
    await store.add('a_tool', { by: 'human' });
    await writeFile(join(stateDir, 'grants.json.lock'), String(pid));
    await store.add('b_tool', { by: 'human' });
    assert.deepEqual(
      store.list().map((g) => g.rule),
      ['a_tool', 'b_tool'],
    );
    assert.deepEqual(await readdir(stateDir), ['grants.json']);
  });

  it('starts empty when there is no file, and creates the state directory on the first grant', async () => {
    const store = GrantStore.open(stateDir);
    assert.equal(store.has('send_notification'), false);
    assert.deepEqual(store.list(), []);
    const grant = await store.add('send_notification', {
      by: 'human',
      channel: 'tick',
      note: 'Pending_Approval/a.md',
      request: 'apr_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      now: new Date('2026-11-21T10:00:00Z'),
    });
    assert.deepEqual(grant, {
      rule: 'send_notification',
      tool: 'send_notification',
      granted_at: '2026-11-21T10:00:00.000Z',
      by: 'human',
      channel: 'tick',
      note: 'Pending_Approval/a.md',
      request: 'apr_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      pack: null,
      schema: null,
    });
    const saved = JSON.parse(await readFile(join(stateDir, 'grants.json'), 'utf8'));
    assert.deepEqual(saved, { version: 2, grants: [grant] });
    assert.deepEqual(await readdir(stateDir), ['grants.json'], 'no temp file left behind');
  });

  it('persists grants across instances and lists them sorted by rule', async () => {
    const first = GrantStore.open(stateDir);
    await first.add('write_file', { by: 'alice', channel: 'cli' });
    await first.add('git_push', { by: 'human', note: 'n.md' });
    const second = GrantStore.open(stateDir);
    assert.deepEqual(
      second.list().map((g) => [g.rule, g.by, g.note]),
      [
        ['git_push', 'human', 'n.md'],
        ['write_file', 'alice', null],
      ],
    );
    assert.equal(second.has('write_file'), true);
  });

  it('matches a scoped grant like a strict allow rule, and a bare one for the whole tool', async () => {
    const store = GrantStore.open(stateDir);
    await store.add('write_file(path:Notes/*)', { by: 'human' });
    const call = (path: unknown) => ({ name: 'write_file', arguments: { path } });
    assert.equal(store.match(call('Notes/a.md'))?.rule, 'write_file(path:Notes/*)');
    assert.equal(store.match(call('Secrets/a.md')), undefined);
    assert.equal(store.match(call(['Notes/a.md', 'Secrets/b.md'])), undefined, 'every element');
    assert.equal(store.match(call('Notes/a.md\n../x')), undefined, 'no control characters');
    assert.equal(store.has('write_file'), false, 'a scoped grant is not the whole tool');
    await store.add('write_file', { by: 'human' });
    assert.equal(store.match(call('Secrets/a.md'))?.rule, 'write_file');
  });

  it('binds a grant to the pack and schema it was given for; a grant without them covers the name', async () => {
    const store = GrantStore.open(stateDir);
    const plugin = toolIdentity({ pack: 'ops-plugin', inputSchema: { type: 'object' } });
    const mcp = toolIdentity({ pack: 'mcp', inputSchema: { type: 'object' } });
    const mcpNew = toolIdentity({
      pack: 'mcp',
      inputSchema: { type: 'object', properties: { all: { type: 'boolean', default: true } } },
    });
    await store.add('danger_zone', { by: 'human', identity: plugin });
    const call = (identity?: ToolIdentity) => ({
      name: 'danger_zone',
      arguments: { target: 'x' },
      identity,
    });
    assert.equal(store.match(call(plugin))?.rule, 'danger_zone');
    assert.deepEqual(
      [store.lookup(call(mcp))?.current, store.match(call(mcp))],
      [false, undefined],
      'the same name from another pack',
    );
    assert.equal(store.match(call()), undefined, 'a call of no known tool');
    // Reloaded from the file: the identity was saved.
    const again = GrantStore.open(stateDir);
    assert.deepEqual(
      [again.list()[0]?.pack, again.list()[0]?.schema],
      [plugin.pack, plugin.schema],
    );
    assert.equal(again.match(call(mcp)), undefined);
    // Given again for the tool as it is now: replaces the old grant.
    await again.add('danger_zone', { by: 'human', identity: mcpNew });
    assert.equal(again.list().length, 1);
    assert.equal(again.match(call(mcpNew))?.rule, 'danger_zone');
    assert.equal(again.match(call(mcp)), undefined, 'the same pack with other parameters');
    assert.equal(again.match(call(plugin)), undefined);

    // A grants file written before grants recorded a tool's identity covers the name.
    await writeFile(
      join(stateDir, 'grants.json'),
      JSON.stringify({ version: 2, grants: [{ rule: 'danger_zone', by: 'human' }] }),
    );
    const old = GrantStore.open(stateDir);
    assert.deepEqual([old.list()[0]?.pack, old.list()[0]?.schema], [null, null]);
    assert.equal(old.match(call(mcp))?.rule, 'danger_zone');
    assert.equal(old.match(call())?.rule, 'danger_zone');
  });

  it('pins a tool’s grant parameters to a call’s values, exactly, or offers no box', () => {
    const tool = { name: 'shell_exec', grantParameters: ['command', 'cwd'] };
    const rule = pinnedRule(tool, { command: 'ls *.md "a\\b"?', cwd: 'work', timeout_s: 5 });
    assert.equal(rule, 'shell_exec(command:"ls \\*.md \\"a\\\\b\\"\\?", cwd:"work")');
    const compiled = compileGrant(rule ?? '');
    assert.ok(typeof compiled !== 'string');
    const call = (command: string, cwd = 'work') => ({
      name: 'shell_exec',
      arguments: { command, cwd },
    });
    assert.equal(matchesRule(compiled, call('ls *.md "a\\b"?')), true);
    assert.equal(matchesRule(compiled, call('ls x.md "a\\b"!')), false, 'no pattern left');
    assert.equal(matchesRule(compiled, call('ls *.md "a\\b"?', '.')), false);
    // A value the box's line cannot carry: no box, not the whole tool.
    assert.equal(pinnedRule(tool, { command: '# compound\nnpm test; rm -rf ~' }), null);
    assert.equal(pinnedRule(tool, { command: 'echo `id`' }), null);
    assert.equal(pinnedRule({ name: 'write_file' }, { path: 'a.md' }), undefined);
  });

  it('sees a revoke made by another instance (the CLI) without an explicit reload', async () => {
    const daemon = GrantStore.open(stateDir);
    await daemon.add('send_notification', { by: 'human' });
    await daemon.add('send_notification(recipient:*@example.com)', { by: 'human' });
    assert.equal(daemon.has('send_notification'), true);
    const cli = GrantStore.open(stateDir);
    assert.equal(await cli.revoke('send_notification'), 2, 'a tool name revokes all its grants');
    assert.equal(await cli.revoke('send_notification'), 0);
    assert.equal(daemon.has('send_notification'), false);
    assert.deepEqual(daemon.list(), []);
  });

  it('keeps grants added by another instance when adding its own', async () => {
    const a = GrantStore.open(stateDir);
    const b = GrantStore.open(stateDir);
    await a.add('write_file', { by: 'human' });
    await b.add('git_push', { by: 'cli' });
    assert.deepEqual(
      a.list().map((g) => g.tool),
      ['git_push', 'write_file'],
    );
  });

  it('reads the version 1 file of earlier releases, sees hand edits, and a deleted file means no grants', async () => {
    const store = GrantStore.open(stateDir);
    await store.add('write_file', { by: 'human' });
    await writeFile(
      join(stateDir, 'grants.json'),
      JSON.stringify({ version: 1, grants: [{ tool: 'delete_file' }] }),
    );
    assert.equal(store.has('write_file'), false);
    assert.equal(store.has('delete_file'), true);
    assert.deepEqual(store.list(), [
      {
        rule: 'delete_file',
        tool: 'delete_file',
        granted_at: '',
        by: 'unknown',
        channel: 'tick',
        note: null,
        request: null,
        pack: null,
        schema: null,
      },
    ]);
    await rm(join(stateDir, 'grants.json'));
    assert.equal(store.has('delete_file'), false);
  });

  it('refuses to open a broken file, quoting its path', async () => {
    await writeFile(join(root, 'grants.json'), '{"grants": [');
    assert.throws(
      () => GrantStore.open(root),
      (error: unknown) => {
        assert.ok(error instanceof GrantsFileError);
        assert.match(error.message, /grants\.json: not valid JSON/);
        return true;
      },
    );
    await writeFile(join(root, 'grants.json'), '{"grants": [{"tool": "Not A Tool"}]}');
    assert.throws(() => GrantStore.open(root), /grants\[0\] "Not A Tool"/);
  });

  it('fails closed when the file breaks while running, and will not overwrite it', async () => {
    const store = GrantStore.open(stateDir);
    await store.add('write_file', { by: 'human' });
    await writeFile(join(stateDir, 'grants.json'), 'garbage');
    assert.equal(store.has('write_file'), false);
    assert.match(store.problem ?? '', /not valid JSON/);
    await assert.rejects(store.add('git_push', { by: 'human' }), /fix or delete the file/);
    assert.equal(await readFile(join(stateDir, 'grants.json'), 'utf8'), 'garbage');
    await writeFile(join(stateDir, 'grants.json'), '{"version": 2, "grants": []}');
    store.reload();
    assert.equal(store.problem, null);
  });

  it('grants one tool, never a glob of tools', async () => {
    const store = GrantStore.open(stateDir);
    await assert.rejects(store.add('send_*', { by: 'human' }), /names one tool/);
    await assert.rejects(store.add('write_file(path', { by: 'human' }), /closing/);
  });
});
