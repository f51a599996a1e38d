import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { tickDecision } from '../../approval/index.ts';
import { resolveLayout, writeFileAtomic } from '../../vault/index.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { loadSetup } from '../setup.ts';

/**
 * `vaultd approve NOTE` / `vaultd reject NOTE`: tick the note's boxes as a human would in
 * Obsidian; the daemon (now, or at its next start) applies the decision.
 * @param decision approve or reject.
 * @param note a path, or a note name in `Pending_Approval/`.
 * @param options common options, `--call`, `--reason`.
 */
export async function runDecision(
  decision: 'approve' | 'reject',
  note: string,
  options: CommonOptions & { call?: string; reason?: string },
): Promise<number> {
  const { config } = await loadSetup(options);
  const layout = resolveLayout(config);
  const candidates = [
    resolve(note),
    join(layout.pending, basename(note)),
    join(layout.pending, `${basename(note)}.md`),
  ];
  for (const path of candidates) {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch {
      continue;
    }
    const outcome = tickDecision(text, decision, {
      ...(options.call === undefined ? {} : { callId: options.call }),
      ...(options.reason === undefined ? {} : { reason: options.reason }),
    });
    if (outcome.ticked.length === 0) {
      process.stderr.write(
        `vaultd: ${path} has no pending call${options.call ? ` with id ${options.call}` : ''}\n`,
      );
      return EXIT.failure;
    }
    await writeFileAtomic(path, outcome.text);
    process.stdout.write(
      `${decision === 'approve' ? 'approved' : 'rejected'}: ${outcome.ticked.join(', ')} in ${path}\n`,
    );
    return EXIT.ok;
  }
  process.stderr.write(`vaultd: no such note: ${note}\n`);
  return EXIT.failure;
}
