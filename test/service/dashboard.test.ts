import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { callBlock, note, startCli, type DaemonProcess } from '../helpers/vault.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  killIfRunning,
  makeServiceVault,
  signalAndWait,
  waitUntilIn,
  type ServiceVault,
} from './helpers.ts';

/** The rows of the markdown table under a `## heading` of the dashboard, as arrays of cells. */
function tableUnder(text: string, heading: string): string[][] {
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) return [];
  const rest = text.slice(start + heading.length + 5);
  const end = rest.indexOf('\n## ');
  const rows = (end < 0 ? rest : rest.slice(0, end))
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    );
  return rows.slice(2); // header and separator
}

/** The text under a `## heading` of the dashboard. */
function sectionUnder(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) return '';
  const rest = text.slice(start + heading.length + 5);
  const end = rest.indexOf('\n## ');
  return end < 0 ? rest : rest.slice(0, end);
}

describe('vaultd run: Dashboard.md', () => {
  let vault: ServiceVault;
  let daemon: DaemonProcess;
  const dashboard = (): string => join(vault.root, 'Dashboard.md');

  before(async () => {
    vault = await makeServiceVault({ extra: 'dashboard_interval_ms: 200' });
    daemon = startCli(['run', '--config', vault.configPath]);
    await daemon.ready();
  });

  after(async () => {
    await killIfRunning(daemon);
    await vault.cleanup();
  });

  it('shows counts per folder, the pending approval as a link, recent calls and per-tool figures', async () => {
    await vault.drop('ok-1.md', note('ok', callBlock('slow_echo', { text: 'one' })));
    await vault.drop('ok-2.md', note('ok', callBlock('slow_echo', { text: 'two', ms: 20 })));
    await vault.drop('bad.md', note('bad', callBlock('slow_echo', { text: 'x', ms: -1 })));
    await vault.drop('ask me.md', note('ask', callBlock('danger_zone', { target: 'prod' })));
    await waitUntilIn(vault, ['ok-1.md', 'ok-2.md'], ['Done']);
    await waitUntilIn(vault, ['bad.md'], ['Failed']);
    await waitUntilIn(vault, ['ask me.md'], ['Pending_Approval']);

    // Rewritten on a timer: wait until it has caught up with the vault.
    const text = await waitFor(
      async () => {
        if (!existsSync(dashboard())) return undefined;
        const t = await readFile(dashboard(), 'utf8');
        const counts = new Map(tableUnder(t, 'Notes').map(([k, v]) => [k, v]));
        const caughtUp =
          counts.get('inbox') === '0' &&
          counts.get('in_progress') === '0' &&
          counts.get('done') === '2' &&
          counts.get('failed') === '1' &&
          counts.get('pending_approval') === '1' &&
          t.includes('[[Pending_Approval/');
        return caughtUp ? t : undefined;
      },
      { message: 'Dashboard.md shows the vault after the run' },
    );

    assert.match(text, /^---\nvaultd: dashboard\nupdated: \d{4}-\d\d-\d\dT/);
    const counts = new Map(tableUnder(text, 'Notes').map(([k, v]) => [k, v]));
    assert.deepEqual(Object.fromEntries(counts), {
      inbox: '0',
      in_progress: '0',
      pending_approval: '1',
      approved: '0',
      rejected: '0',
      done: '2',
      failed: '1',
    });

    const waiting = sectionUnder(text, 'Waiting for you');
    assert.match(waiting, /^- \[\[Pending_Approval\/ask me\]\]: `danger_zone`$/m);

    const recent = tableUnder(text, 'Recent calls');
    assert.equal(recent.length, 3, 'one row per finished call; the pending one has not run');
    const byNote = new Map(recent.map((r) => [r[4], r]));
    // Recent calls link the note where it is now, not where it was while its calls ran.
    assert.equal(byNote.get('Done/ok-1.md')?.[1], '`slow_echo`');
    assert.equal(byNote.get('Done/ok-1.md')?.[2], 'success');
    assert.equal(byNote.get('Done/ok-2.md')?.[2], 'success');
    assert.equal(byNote.get('Failed/bad.md')?.[2], 'error (INVALID_PARAMS)');
    for (const row of recent) assert.match(row[0] ?? '', /^\d{4}-\d\d-\d\dT[\d:.]+Z$/);

    const tools = new Map(tableUnder(text, 'Tools since start').map((r) => [r[0], r]));
    const echo = tools.get('`slow_echo`');
    assert.ok(echo, 'a row for slow_echo');
    // calls, ok, errors, rejected, timeouts
    assert.deepEqual(echo.slice(1, 6), ['3', '2', '1', '0', '0']);
    assert.equal(tools.has('`danger_zone`'), false, 'the pending call has not run');
  });

  it('shows an approved call once it ran, and the empty approval list', async () => {
    const pending = join(vault.root, 'Pending_Approval', 'ask me.md');
    const approved = join(vault.root, 'Approved', 'ask me.md');
    await rename(pending, approved);
    await waitUntilIn(vault, ['ask me.md'], ['Done']);
    const text = await waitFor(async () => {
      const t = await readFile(dashboard(), 'utf8');
      const counts = new Map(tableUnder(t, 'Notes').map(([k, v]) => [k, v]));
      // Folder counts and call figures are taken at different moments: wait for both.
      const caughtUp =
        counts.get('done') === '3' &&
        t.includes('Nothing waits for a decision.') &&
        t.includes('`danger_zone`');
      return caughtUp ? t : undefined;
    });
    const tools = new Map(tableUnder(text, 'Tools since start').map((r) => [r[0], r]));
    assert.deepEqual(tools.get('`danger_zone`')?.slice(1, 3), ['1', '1']);
    const counts = new Map(tableUnder(text, 'Notes').map(([k, v]) => [k, v]));
    assert.equal(counts.get('pending_approval'), '0');
    assert.equal(counts.get('approved'), '0');
    assert.equal(await signalAndWait(daemon, 'SIGTERM'), 0);
  });
});
