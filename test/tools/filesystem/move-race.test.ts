// Review finding: move_file of a folder checked every entry in it, then renamed the folder. An
// entry the agent added in between (a .git/hooks/ script) moved into place unchecked. The tree is
// now checked again where it landed, and moved back when something may not be there.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { moveFile } from '../../../src/tools/filesystem/change.ts';
import { makeSandbox, type FsSandbox } from './helpers.ts';

describe('a folder moved while the agent adds to it', () => {
  let box: FsSandbox;
  beforeEach(async () => {
    box = await makeSandbox();
    mkdirSync(`${box.vault}/Notes/tmp`);
    writeFileSync(`${box.vault}/Notes/tmp/a.txt`, 'a');
  });
  afterEach(async () => {
    await box.cleanup();
  });

  it('a git folder added after the check: refused, and the folder is back where it was', async () => {
    let armed = true;
    // The handler's last check before the rename is of the last entry's destination.
    const addGitAfterCheck = async (path: string): Promise<void> => {
      if (!armed || !path.endsWith('/Notes/proj/a.txt')) return;
      armed = false;
      mkdirSync(`${box.vault}/Notes/tmp/.git/hooks`, { recursive: true });
      writeFileSync(`${box.vault}/Notes/tmp/.git/hooks/post-checkout`, '#!/bin/sh\necho pwned\n', {
        mode: 0o755,
      });
    };
    await assert.rejects(
      box.call(
        moveFile as never,
        { source: 'Notes/tmp', destination: 'Notes/proj' },
        addGitAfterCheck as never,
      ),
      /appeared in Notes\/tmp while the call ran.*moved back/s,
    );
    assert.equal(armed, false, 'the agent made its move');
    assert.equal(existsSync(`${box.vault}/Notes/proj`), false);
    assert.deepEqual(readdirSync(`${box.vault}/Notes/tmp`).sort(), ['.git', 'a.txt']);
  });

  it('the old place taken before the move back: the landed folder is deleted, never left with the hook (review finding)', async () => {
    // The agent made a folder at the source's name right after the rename: the move back failed
    // (EEXIST) and Notes/proj/.git/hooks/post-checkout stayed in place.
    writeFileSync(`${box.vault}/Notes/tmp/+first`, 'listed before .git');
    let added = false;
    let blocked = false;
    const agent = async (path: string): Promise<void> => {
      if (!added && path.endsWith('/Notes/proj/a.txt')) {
        added = true;
        mkdirSync(`${box.vault}/Notes/tmp/.git/hooks`, { recursive: true });
        writeFileSync(`${box.vault}/Notes/tmp/.git/hooks/post-checkout`, '#!/bin/sh\necho pwned\n');
      } else if (
        added &&
        !blocked &&
        path.startsWith(`${box.vault}/Notes/proj`) &&
        !existsSync(`${box.vault}/Notes/tmp`)
      ) {
        blocked = true;
        mkdirSync(`${box.vault}/Notes/tmp`);
      }
    };
    await assert.rejects(
      box.call(
        moveFile as never,
        { source: 'Notes/tmp', destination: 'Notes/proj' },
        agent as never,
      ),
      /could not be moved back .*so it was deleted/s,
    );
    assert.equal(blocked, true, 'the agent took the old name');
    assert.equal(existsSync(`${box.vault}/Notes/proj`), false);
  });

  it('without additions, the folder moves', async () => {
    await box.call(moveFile as never, { source: 'Notes/tmp', destination: 'Notes/proj' });
    assert.deepEqual(readdirSync(`${box.vault}/Notes/proj`), ['a.txt']);
  });
});
