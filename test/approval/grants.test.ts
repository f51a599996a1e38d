import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrantStore, GrantsFileError } from '../../src/approval/grants.ts';

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

  it('starts empty when there is no file, and creates the state directory on the first grant', async () => {
    const store = GrantStore.open(stateDir);
    assert.equal(store.has('send_notification'), false);
    assert.deepEqual(store.list(), []);
    const grant = store.add('send_notification', {
      by: 'human',
      note: 'Pending_Approval/a.md',
      now: new Date('2026-11-21T10:00:00Z'),
    });
    assert.deepEqual(grant, {
      tool: 'send_notification',
      granted_at: '2026-11-21T10:00:00.000Z',
      by: 'human',
      note: 'Pending_Approval/a.md',
    });
    const saved = JSON.parse(await readFile(join(stateDir, 'grants.json'), 'utf8'));
    assert.deepEqual(saved, { version: 1, grants: [grant] });
    assert.deepEqual(await readdir(stateDir), ['grants.json'], 'no temp file left behind');
  });

  it('persists grants across instances and lists them sorted by tool', () => {
    const first = GrantStore.open(stateDir);
    first.add('write_file', { by: 'cli' });
    first.add('git_push', { by: 'human', note: 'n.md' });
    const second = GrantStore.open(stateDir);
    assert.deepEqual(
      second.list().map((g) => [g.tool, g.by, g.note]),
      [
        ['git_push', 'human', 'n.md'],
        ['write_file', 'cli', null],
      ],
    );
    assert.equal(second.has('write_file'), true);
  });

  it('sees a revoke made by another instance (the CLI) without an explicit reload', () => {
    const daemon = GrantStore.open(stateDir);
    daemon.add('send_notification', { by: 'human' });
    assert.equal(daemon.has('send_notification'), true);
    const cli = GrantStore.open(stateDir);
    assert.equal(cli.revoke('send_notification'), true);
    assert.equal(cli.revoke('send_notification'), false);
    assert.equal(daemon.has('send_notification'), false);
  });

  it('keeps grants added by another instance when adding its own', () => {
    const a = GrantStore.open(stateDir);
    const b = GrantStore.open(stateDir);
    a.add('write_file', { by: 'human' });
    b.add('git_push', { by: 'cli' });
    assert.deepEqual(
      a.list().map((g) => g.tool),
      ['git_push', 'write_file'],
    );
  });

  it('sees a hand edit of the file, and a deleted file means no grants', async () => {
    const store = GrantStore.open(stateDir);
    store.add('write_file', { by: 'human' });
    await writeFile(
      join(stateDir, 'grants.json'),
      JSON.stringify({ version: 1, grants: [{ tool: 'delete_file' }] }),
    );
    assert.equal(store.has('write_file'), false);
    assert.equal(store.has('delete_file'), true);
    assert.deepEqual(store.list(), [
      { tool: 'delete_file', granted_at: '', by: 'unknown', note: null },
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
    assert.throws(() => GrantStore.open(root), /grants\[0\] has no valid "tool" name/);
  });

  it('fails closed when the file breaks while running, and will not overwrite it', async () => {
    const store = GrantStore.open(stateDir);
    store.add('write_file', { by: 'human' });
    await writeFile(join(stateDir, 'grants.json'), 'garbage');
    assert.equal(store.has('write_file'), false);
    assert.match(store.problem ?? '', /not valid JSON/);
    assert.throws(() => store.add('git_push', { by: 'human' }), /fix or delete the file/);
    assert.equal(await readFile(join(stateDir, 'grants.json'), 'utf8'), 'garbage');
    await writeFile(join(stateDir, 'grants.json'), '{"version": 1, "grants": []}');
    store.reload();
    assert.equal(store.problem, null);
  });

  it('grants one tool by name, never a glob', () => {
    const store = GrantStore.open(stateDir);
    assert.throws(() => store.add('send_*', { by: 'human' }), /not a tool name/);
  });
});
