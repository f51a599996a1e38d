import { join } from 'node:path';
import { GrantStore } from '../../approval/index.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { loadSetup } from '../setup.ts';
import { printable, printableJson } from '../printable.ts';

async function openGrants(options: CommonOptions): Promise<GrantStore> {
  const { config } = await loadSetup(options);
  return GrantStore.open(join(config.vault, '.vaultd'));
}

/**
 * `vaultd grants [list]`: the always-allow grants, each a tool or a scoped rule.
 * @param options common options and `--json`.
 */
export async function runGrants(options: CommonOptions & { json?: boolean }): Promise<number> {
  const grants = (await openGrants(options)).list();
  if (options.json) {
    process.stdout.write(`${printableJson(grants)}\n`);
  } else if (grants.length === 0) {
    process.stdout.write('no grants: every dangerous call asks a human\n');
  } else {
    for (const g of grants) {
      process.stdout.write(
        `${printable(`${g.rule.padEnd(24)} granted ${g.granted_at} by ${g.by} (${g.channel})${g.note ? ` on ${g.note}` : ''}${g.pack === null ? ' (any pack: given before grants recorded one)' : ` (${g.pack} pack)`}`)}\n`,
      );
    }
  }
  return EXIT.ok;
}

/**
 * `vaultd grants revoke RULE|TOOL`: the matching calls ask a human again; a running daemon sees it
 * at once. A bare tool name revokes every grant of that tool.
 * @param rule the grant's rule as listed, or a tool name.
 * @param options common options.
 */
export async function runRevoke(rule: string, options: CommonOptions): Promise<number> {
  const store = await openGrants(options);
  const removed = await store.revoke(rule);
  if (removed === 0) {
    process.stderr.write(`vaultd: no grant for ${JSON.stringify(rule)}\n`);
    return EXIT.failure;
  }
  process.stdout.write(
    `revoked ${removed} grant${removed === 1 ? '' : 's'}: calls of ${rule} ask a human again\n`,
  );
  return EXIT.ok;
}
