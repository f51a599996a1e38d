import { join } from 'node:path';
import type { VaultLayout } from './layout.ts';

/**
 * vaultd's own folders and state, and the editor's: no tool writes there. The inbox is among them:
 * a tool that writes notes there would make calls that make calls, with no human in the loop
 * once a grant or a scratch folder covers it; agents write the inbox themselves. Git folders
 * (`.git` at any depth) are refused by the access itself, not listed here.
 * @param layout the vault's folders.
 * @returns absolute paths, folders or files.
 */
export function protectedForWrite(layout: VaultLayout): string[] {
  return [
    layout.state,
    layout.inbox,
    layout.inProgress,
    layout.pending,
    layout.approved,
    layout.rejected,
    layout.done,
    layout.failed,
    layout.logs,
    join(layout.root, '.obsidian'),
    join(layout.root, '.trash'),
    join(layout.root, 'Dashboard.md'),
  ];
}
