import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/observe/logger.ts';

// A note named by an agent with a right-to-left override and a one-character CSI (U+009B):
// written raw into a JSON log line, `journalctl` or `tail` on a terminal shows the line
// reordered, or hands the terminal a command.
const NAME = 'Needs_Action/invoice\u202Egpj.exe\u009B2J\u200F.md';

async function logged(redact?: (line: string) => string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vaultd-logger-'));
  try {
    const path = join(dir, 'log');
    const fd = openSync(path, 'w');
    const logger = createLogger('info', fd, redact, (write) => write());
    logger.info({ note: NAME }, 'note processed');
    closeSync(fd);
    return await readFile(path, 'utf8');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('log lines', () => {
  for (const [label, redact] of [
    ['with no redactor', undefined],
    ['after the redactor', (line: string) => line.replace('invoice', '[redacted]')],
  ] as const) {
    it(`carry no bidi or C1 character raw, and the same JSON (${label})`, async () => {
      const text = await logged(redact);
      assert.equal(text.split('\n').length, 2, text);
      assert.doesNotMatch(text, /[\u0080-\u009f\u200e\u200f\u202a-\u202e]/u);
      assert.match(text, /\\u202e/);
      const note = (JSON.parse(text) as { note: string }).note;
      assert.equal(note, redact === undefined ? NAME : NAME.replace('invoice', '[redacted]'));
    });
  }
});
