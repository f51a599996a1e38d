import { readdir, readFile } from 'node:fs/promises';

/**
 * Kill (SIGKILL) every process whose command line holds a sandbox's tag. A sandbox killed in its
 * first milliseconds can leave a bwrap child that has left vaultd's process group (new session)
 * before it asked to die with its parent; its command line still carries the tag.
 * @param tags the tags of the sandboxes just killed.
 * @returns how many processes were killed.
 */
export async function killTagged(tags: readonly string[]): Promise<number> {
  if (tags.length === 0) return 0;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return 0;
  }
  let killed = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = await readFile(`/proc/${entry}/cmdline`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    if (!tags.some((tag) => cmdline.includes(tag))) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed += 1;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}
