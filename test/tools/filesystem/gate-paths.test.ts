// Policy rules and always-allow grants on path parameters, through the real gate, executor and
// filesystem pack: a rule matches the canonical path (vault-relative, no `.` or `..`, links
// resolved), so a grant never reaches further than written and a deny is not dodged by spelling.
import assert from 'node:assert/strict';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ApprovalGate } from '../../../src/approval/gate.ts';
import { GrantStore } from '../../../src/approval/grants.ts';
import { compilePolicy, type PolicyRules } from '../../../src/approval/policy.ts';
import { Executor } from '../../../src/execute/executor.ts';
import { ToolRegistry } from '../../../src/protocol/registry.ts';
import type { ToolResult } from '../../../src/protocol/types.ts';
import { FILESYSTEM_TOOLS } from '../../../src/tools/filesystem/index.ts';
import { hashArguments } from '../../../src/protocol/hash-arguments.ts';
import { makeSandbox, type FsSandbox } from './helpers.ts';

describe('path rules through the gate', () => {
  let box: FsSandbox;
  let grants: GrantStore;
  beforeEach(async () => {
    box = await makeSandbox();
    await mkdir(join(box.vault, 'Projects'));
    await mkdir(join(box.vault, 'Private'));
    await writeFile(join(box.vault, 'Projects', 'plan.md'), "the human's plan\n");
    await writeFile(join(box.vault, 'Private', 'secret.md'), 'TOP SECRET\n');
    grants = GrantStore.open(join(box.base, 'state'));
  });
  afterEach(async () => {
    await box.cleanup();
  });

  const executor = (
    policy: PolicyRules = {},
    gate = new ApprovalGate({ policy: compilePolicy(policy), grants }),
  ): Executor => {
    const registry = new ToolRegistry();
    for (const tool of FILESYSTEM_TOOLS) registry.register(tool);
    return new Executor(registry, {
      gate,
      runtime: () => ({ config: {}, files: box.access }),
      cacheTtlMs: 0,
    });
  };
  const run = (ex: Executor, name: string, args: Record<string, unknown>): Promise<ToolResult> =>
    ex.execute({ id: 'c1', name, arguments: args });
  const file = (rel: string): Promise<string> =>
    readFile(join(box.vault, rel), 'utf8').catch(() => '(missing)');

  it('a grant for Notes/* does not cover Notes/../Projects/plan.md', async () => {
    await grants.add('write_file(path:Notes/*)', { by: 'human' });
    const ex = executor();
    const inside = await run(ex, 'write_file', { path: 'Notes/todo.md', content: 'todo\n' });
    assert.equal(inside.status, 'success', inside.content);
    assert.equal(inside.metadata.approved_by, 'policy');

    const escaped = await run(ex, 'write_file', {
      path: 'Notes/../Projects/plan.md',
      content: 'OVERWRITTEN\n',
    });
    assert.equal(escaped.status, 'rejected', escaped.content);
    assert.match(escaped.content, /needs a human's decision/);
    assert.equal(await file('Projects/plan.md'), "the human's plan\n");
  });

  it('a grant for Notes/* does not cover a path through a link the agent made under Notes/', async () => {
    await grants.add('write_file(path:Notes/*)', { by: 'human' });
    await symlink('../Projects', join(box.vault, 'Notes', 'lnk'));
    const ex = executor();
    const through = await run(ex, 'write_file', { path: 'Notes/lnk/other.md', content: 'x\n' });
    assert.equal(through.status, 'rejected', through.content);
    assert.equal(await file('Projects/other.md'), '(missing)');
    const over = await run(ex, 'write_file', { path: 'Notes/lnk/plan.md', content: 'x\n' });
    assert.equal(over.status, 'rejected', over.content);
    assert.equal(await file('Projects/plan.md'), "the human's plan\n");
  });

  it('a grant still covers other spellings of a path inside its scope, run on the canonical path', async () => {
    await grants.add('write_file(path:Notes/*)', { by: 'human' });
    const ex = executor();
    for (const path of [
      './Notes/a.md',
      'Notes//b.md',
      `${box.vault}/Notes/c.md`,
      'x/../Notes/d.md',
    ]) {
      const result = await run(ex, 'write_file', { path, content: `${path}\n` });
      assert.equal(result.status, 'success', `${path}: ${result.content}`);
    }
    assert.equal(await file('Notes/c.md'), `${box.vault}/Notes/c.md\n`);
  });

  it('a policy allow rule on a path does not reach outside it either', async () => {
    const ex = executor({ allow: ['write_file(path:Notes/*)'] });
    const result = await run(ex, 'write_file', {
      path: 'Notes/../Projects/plan.md',
      content: 'OVERWRITTEN\n',
    });
    assert.equal(result.status, 'rejected', result.content);
    assert.equal(await file('Projects/plan.md'), "the human's plan\n");
  });

  it('a deny rule on a path is not dodged by ./, .., an absolute path or a link', async () => {
    await symlink('../Private', join(box.vault, 'Notes', 'hidden'));
    const ex = executor({ deny: ['read_file(path:Private/*)'] });
    for (const path of [
      'Private/secret.md',
      './Private/secret.md',
      'Notes/../Private/secret.md',
      `${box.vault}/Private/secret.md`,
      'Private//secret.md',
      'Notes/hidden/secret.md',
    ]) {
      const result = await run(ex, 'read_file', { path });
      assert.equal(result.status, 'rejected', `${path}: ${result.content}`);
      assert.match(result.content, /policy forbids this call/, path);
    }
    const other = await run(ex, 'read_file', { path: 'Projects/plan.md' });
    assert.equal(other.status, 'success', other.content);
  });

  it('a deny rule written through a link still matches the spelling the agent used', async () => {
    await symlink('../Projects', join(box.vault, 'Notes', 'lnk'));
    const ex = executor({ deny: ['read_file(path:Notes/lnk/*)'] });
    const result = await run(ex, 'read_file', { path: 'Notes/lnk/plan.md' });
    assert.equal(result.status, 'rejected', result.content);
    assert.match(result.content, /policy forbids this call/);
  });

  it('copy_file matches both paths on their canonical form', async () => {
    await grants.add('copy_file(source:Notes/*, destination:Notes/*)', { by: 'human' });
    await writeFile(join(box.vault, 'Notes', 'a.md'), 'a\n');
    const ex = executor();
    const ok = await run(ex, 'copy_file', { source: 'Notes/a.md', destination: './Notes/b.md' });
    assert.equal(ok.status, 'success', ok.content);
    const out = await run(ex, 'copy_file', {
      source: 'Notes/a.md',
      destination: 'Notes/../Projects/plan.md',
      overwrite: true,
    });
    assert.equal(out.status, 'rejected', out.content);
    assert.equal(await file('Projects/plan.md'), "the human's plan\n");
  });

  it('shows the canonical path to the gate, and a link loop is refused before the gate', async () => {
    const ex = executor();
    const checked = ex.check({
      id: 'c',
      name: 'write_file',
      arguments: { path: './Notes/../Projects/x.md', content: '' },
    });
    assert.ok(checked.ok);
    assert.equal(checked.args['path'], 'Projects/x.md');
    assert.deepEqual(checked.spelledPaths, { path: './Notes/../Projects/x.md' });
    const plain = ex.check({
      id: 'c',
      name: 'write_file',
      arguments: { path: 'Notes/x.md', content: '' },
    });
    assert.ok(plain.ok);
    assert.equal(plain.spelledPaths, undefined);
    await symlink('loop', join(box.vault, 'Notes', 'loop'));
    const loop = ex.check({
      id: 'c',
      name: 'write_file',
      arguments: { path: 'Notes/loop/x.md', content: '' },
    });
    assert.ok(!loop.ok);
    assert.equal(loop.error.code, 'INVALID_PARAMS');
    assert.match(loop.error.message, /loop of symbolic links/);
  });

  it('refuses a call whose path a link was swapped into after the gate let it run', async () => {
    await grants.add('write_file(path:Notes/*)', { by: 'human' });
    const gate = new ApprovalGate({ grants });
    const swapped = executor({}, gate);
    const call = {
      id: 'c2',
      name: 'write_file',
      arguments: { path: 'Notes/new/x.md', content: 'x\n' },
    };
    const checked = swapped.check(call);
    assert.ok(checked.ok);
    const verdict = gate.evaluate({
      id: call.id,
      name: call.name,
      arguments: checked.args,
      argsHash: hashArguments(checked.args),
      safety: 'dangerous',
    });
    assert.equal(verdict.action, 'run');
    assert.ok(verdict.action === 'run');
    // Between the decision and the run, the agent makes Notes/new a link to Projects.
    await symlink('../Projects', join(box.vault, 'Notes', 'new'));
    const result = await swapped.execute(
      { ...call, arguments: checked.args },
      { authorization: verdict.auth },
    );
    assert.equal(result.status, 'rejected', result.content);
    assert.match(result.content, /no valid permission/);
    assert.equal(await file('Projects/x.md'), '(missing)');
  });

  it('expresses a path outside the vault on its real path, refused by the access layer', async () => {
    await symlink(box.outside, join(box.vault, 'Notes', 'out'));
    await grants.add('read_file(path:Notes/*)', { by: 'human' });
    const ex = executor({ allow: ['read_file(path:Notes/*)'] });
    const checked = ex.check({
      id: 'c',
      name: 'read_file',
      arguments: { path: 'Notes/out/secret.txt' },
    });
    assert.ok(checked.ok);
    assert.equal(checked.args['path'], join(box.outside, 'secret.txt'));
    const result = await run(ex, 'read_file', { path: 'Notes/out/secret.txt' });
    assert.notEqual(result.status, 'success', result.content);
    assert.doesNotMatch(result.content, /outside secret/);
  });
});
