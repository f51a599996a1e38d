import { readdir, readFile } from 'node:fs/promises';

/** Sweeps at most this many times: a process found may have forked before it was killed. */
const MAX_SWEEPS = 3;

/**
 * SIGKILL every process whose environment holds `name=value`: the way to find what a child
 * started in a session of its own (`setsid`, a daemonising server), which a signal to the child's
 * process group never reaches, while it still carries the variable it inherited. Reads
 * `/proc/PID/environ`, so it sees this user's processes only (all of them as root); never this
 * process. Sweeps again while it finds any, up to {@link MAX_SWEEPS} times.
 * @param name the variable's name.
 * @param value its value, unique to what is to be ended.
 * @returns how many processes were killed.
 */
export async function killByEnvironment(name: string, value: string): Promise<number> {
  const entry = Buffer.from(`${name}=${value}\0`);
  const inside = Buffer.concat([Buffer.from([0]), entry]);
  let killed = 0;
  for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    let found = 0;
    let pids: string[];
    try {
      pids = await readdir('/proc');
    } catch {
      return killed; // no /proc here
    }
    for (const pid of pids) {
      if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
      let environ: Buffer;
      try {
        environ = await readFile(`/proc/${pid}/environ`);
      } catch {
        continue; // gone meanwhile, or another user's
      }
      if (!environ.subarray(0, entry.length).equals(entry) && !environ.includes(inside)) continue;
      try {
        process.kill(Number(pid), 'SIGKILL');
        found += 1;
      } catch {
        // gone meanwhile
      }
    }
    killed += found;
    if (found === 0) break;
  }
  return killed;
}
