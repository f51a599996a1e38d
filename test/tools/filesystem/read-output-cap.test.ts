import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  callBlock,
  makeVault,
  note,
  resultsOf,
  runCli,
  type TempVault,
} from '../../helpers/vault.ts';

// read_file's own cap (max_read_bytes) and the executor's output cap meet: the line saying where
// to go on must reach the agent whole, and next_start_line must follow the last line it got.
describe('read_file of a file over its cap, through the executor', () => {
  const vaults: TempVault[] = [];
  after(async () => {
    for (const v of vaults) await v.cleanup();
  });

  const readBig = async (section: string): Promise<{ content: string; next: number }> => {
    const vault = await makeVault(`tools:\n  filesystem:\n    enabled: true\n${section}`);
    vaults.push(vault);
    await mkdir(join(vault.root, 'Notes'));
    const lines = Array.from({ length: 6000 }, (_, i) => `line ${i + 1} ${'y'.repeat(100)}\n`);
    await writeFile(join(vault.root, 'Notes', 'big.txt'), lines.join(''));
    await vault.drop('big.md', note('Big', callBlock('read_file', { path: 'Notes/big.txt' }, 'r')));
    const res = await runCli(['once', '--config', vault.configPath, '--no-progress']);
    assert.equal(res.code, 0, res.stderr);
    const [result] = resultsOf(await vault.read('Done', 'big.md'));
    assert.equal(result?.status, 'success', result?.content);
    const data = result?.data as { truncated: boolean; end_line: number; next_start_line: number };
    assert.equal(data.truncated, true);
    assert.equal(data.next_start_line, data.end_line + 1);
    return { content: result?.content ?? '', next: data.next_start_line };
  };

  const check = ({ content, next }: { content: string; next: number }): void => {
    assert.doesNotMatch(content, /output truncated/);
    assert.match(content, new RegExp(`read on with start_line: ${next}\\]$`));
    const lines = content.split('\n');
    assert.match(lines[lines.length - 2] ?? '', new RegExp(`^line ${next - 1} y+$`));
  };

  it('says whole where to go on with the defaults', async () => {
    check(await readBig(''));
  });

  it('never skips lines when max_read_bytes is over the output cap', async () => {
    check(await readBig('    max_read_bytes: 400000\n'));
  });

  it('keeps within a lower max_output_bytes of read_file', async () => {
    check(await readBig('    limits:\n      read_file: { max_output_bytes: 100000 }\n'));
  });
});
