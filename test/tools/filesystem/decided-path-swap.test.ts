// Review finding: a change allowed for one path made on another. The executor brings a path to its
// canonical form before the gate, so an allow rule, a grant or the human covers `Drafts/x.md`;
// afterwards, while the call waits for its slot, the agent's job renames `Drafts` and puts a link
// `Drafts → Notes` in its place, and the handler, resolving the path again, followed the link and
// changed `Notes/x.md` (/work/scratch/rvB/fs-approved-path-swap.test.ts). Only scratch folders were
// checked again. The gate-paths test of a link swapped in after the decision passes because its
// link is in place before the executor's own check, which makes the path canonical again: the
// permission no longer fits. Here the swap comes after that check (in the executor's `before` hook,
// the last step before the slot and the handler): each writing tool must refuse it itself.
import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ApprovalGate } from '../../../src/approval/gate.ts';
import { GrantStore } from '../../../src/approval/grants.ts';
import { compilePolicy } from '../../../src/approval/policy.ts';
import { Executor } from '../../../src/execute/executor.ts';
import { ToolRegistry } from '../../../src/protocol/registry.ts';
import { FILESYSTEM_TOOLS } from '../../../src/tools/filesystem/index.ts';
import { makeSandbox, type FsSandbox } from './helpers.ts';

const DRAFT = 'a draft note\n';
const HUMAN = "the human's note\n";

/** Each writing tool of the pack, allowed on `Drafts/` only, and what its call would make. */
const CASES: readonly {
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly leadsTo: string;
}[] = [
  { tool: 'write_file', args: { path: 'Drafts/x.md', content: 'agent text\n' }, leadsTo: 'x.md' },
  {
    tool: 'edit_file',
    args: { path: 'Drafts/x.md', edits: [{ old_text: 'note', new_text: 'NOTE' }] },
    leadsTo: 'x.md',
  },
  { tool: 'delete_file', args: { path: 'Drafts/x.md' }, leadsTo: 'x.md' },
  { tool: 'create_directory', args: { path: 'Drafts/sub' }, leadsTo: 'sub' },
  {
    tool: 'copy_file',
    args: { source: 'Drafts/x.md', destination: 'Drafts/y.md', overwrite: true },
    leadsTo: 'x.md',
  },
  {
    tool: 'move_file',
    args: { source: 'Drafts/x.md', destination: 'Drafts/y.md', overwrite: true },
    leadsTo: 'x.md',
  },
];

describe('a link swapped in under an allowed path after the executor checked it', () => {
  let box: FsSandbox;
  beforeEach(async () => {
    box = await makeSandbox();
    await mkdir(join(box.vault, 'Drafts'));
    await writeFile(join(box.vault, 'Drafts', 'x.md'), DRAFT);
    await writeFile(join(box.vault, 'Notes', 'x.md'), HUMAN);
  });
  afterEach(async () => {
    await box.cleanup();
  });

  /** An executor allowing each tool on `Drafts/*`; `before` runs after the gate let a call run. */
  const executor = (before?: () => Promise<void>): Executor => {
    const registry = new ToolRegistry();
    for (const tool of FILESYSTEM_TOOLS) registry.register(tool);
    const allow = CASES.map(({ tool, args }) =>
      'path' in args ? `${tool}(path:Drafts/*)` : `${tool}(source:Drafts/*, destination:Drafts/*)`,
    );
    const gate = new ApprovalGate({
      policy: compilePolicy({ allow }),
      grants: GrantStore.open(join(box.base, 'state')),
    });
    return new Executor(registry, {
      gate,
      runtime: () => ({ config: {}, files: box.access }),
      cacheTtlMs: 0,
      ...(before === undefined ? {} : { hooks: { before } }),
    });
  };
  const file = (rel: string): Promise<string> =>
    readFile(join(box.vault, rel), 'utf8').catch(() => '(missing)');

  for (const { tool, args, leadsTo } of CASES) {
    it(`${tool}: refused, Notes/ untouched (the attack replayed)`, async () => {
      let swapped = false;
      const ex = executor(async () => {
        // The agent's job, while the call waits for its slot.
        await rename(join(box.vault, 'Drafts'), join(box.vault, 'Drafts.old'));
        await symlink('Notes', join(box.vault, 'Drafts'));
        swapped = true;
      });
      const result = await ex.execute({ id: 'c1', name: tool, arguments: args });
      assert.equal(swapped, true, 'the agent made its swap');
      assert.equal(result.metadata.approved_by, 'policy');
      assert.notEqual(result.status, 'success', result.content);
      assert.equal(result.error?.code, 'PERMISSION_DENIED', result.content);
      assert.match(
        result.content,
        new RegExp(
          `Drafts/${leadsTo} changed while the call waited: it now leads to Notes/${leadsTo}`,
        ),
      );
      assert.equal(await file('Notes/x.md'), HUMAN);
      assert.deepEqual((await readdir(join(box.vault, 'Notes'))).sort(), ['x.md']);
      assert.equal(await file('Drafts.old/x.md'), DRAFT);
    });
  }

  it('each tool still runs on the path allowed when nothing is swapped', async () => {
    const ex = executor();
    for (const { tool, args } of CASES) {
      await writeFile(join(box.vault, 'Drafts', 'x.md'), DRAFT);
      const result = await ex.execute({ id: `c-${tool}`, name: tool, arguments: args });
      assert.equal(result.status, 'success', `${tool}: ${result.content}`);
      assert.equal(result.metadata.approved_by, 'policy');
    }
    assert.equal(await file('Notes/x.md'), HUMAN);
  });
});
