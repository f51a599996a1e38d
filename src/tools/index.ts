import type { Tool } from '../protocol/types.ts';
import { searchWeb } from './search-web/index.ts';
import { sendNotification } from './send-notification/index.ts';

/**
 * The tools vaultd ships with, registered in every run.
 */
export function builtinTools(): Tool[] {
  return [searchWeb, sendNotification] as unknown as Tool[];
}
