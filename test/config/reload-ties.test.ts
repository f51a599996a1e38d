import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { configFileOf, envValuesOf, loadConfig } from '../../src/config/load-config.ts';
import { withRunningValues } from '../../src/daemon.ts';

// What keeps the tools from reading or writing the config file is the loaded config's tie to that
// file (configFileOf). A config read again at SIGHUP, with the keys only a restart applies put
// back, was a structuredClone that lost the tie (mode parity review).
describe('a config read again at SIGHUP', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vaultd-reload-ties-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('stays tied to its file and its ${ENV} values, with the running values put back', async () => {
    const file = join(dir, 'vaultd.yaml');
    await writeFile(file, 'vault: v\nconcurrency: 3\nmax_calls_per_note: 100\n');
    const env = { TOKEN: 'a-token-long-enough-1234' };
    const running = await loadConfig({ file, env });
    await writeFile(
      file,
      'vault: v\nconcurrency: 5\nmax_calls_per_note: 200\nhttp:\n  api_token_env: TOKEN\n',
    );
    const next = await loadConfig({ file, env });
    const effective = withRunningValues(next, running, ['max_calls_per_note']);
    assert.equal(effective.concurrency, 5);
    assert.equal(effective.max_calls_per_note, 100);
    assert.equal(configFileOf(effective), file);
    assert.deepEqual(envValuesOf(effective), envValuesOf(next));
    assert.ok(Object.isFrozen(effective));
  });
});
