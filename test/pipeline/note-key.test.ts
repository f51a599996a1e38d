// noteKey cuts the vault's path off a note's path; it must name every path as path.relative does.
import assert from 'node:assert/strict';
import { relative } from 'node:path';
import { test } from 'node:test';
import type { PipelineContext } from '../../src/pipeline/context.ts';
import { noteKey } from '../../src/pipeline/note-key.ts';

test('a note key is the path relative to the vault, whatever the path looks like', () => {
  const root = '/srv/vault';
  const ctx = { layout: { root } } as unknown as PipelineContext;
  const paths = [
    '/srv/vault/Done/a.md',
    '/srv/vault/Needs_Action/sub dir/é.md',
    '/srv/vault/Done/.hidden.md',
    '/srv/vault/Done/..a.md',
    '/srv/vault/Done/./a.md',
    '/srv/vault/Done/../Failed/a.md',
    '/srv/vault//Done/a.md',
    '/srv/vault',
    '/srv/vault2/a.md',
    '/srv/a.md',
  ];
  for (const path of paths) assert.equal(noteKey(ctx, path), relative(root, path), path);
});
