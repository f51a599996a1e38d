import { readdir, readFile } from 'node:fs/promises';

/** Sweeps at most this many times: a process found may have forked before it was killed. */
const MAX_SWEEPS = 3;

/**
 * SIGKILL every process whose `/proc/PID/<file>` (its command line, or the environment it was
 * started with) `matches`: the way to find what left the process group it was started in (a new
 * session, a daemonising child), which a signal to that group never reaches. Sees this user's
 * processes only (all of them as root); never this process.
 * @param file which file of `/proc/PID` is read.
 * @param matches whether the process is one to kill, from that file's bytes.
 * @returns how many processes were killed.
 */
export async function killProcessesWhose(
  file: 'cmdline' | 'environ',
  matches: (content: Buffer) => boolean,
): Promise<number> {
  let pids: string[];
  try {
    pids = await readdir('/proc');
  } catch {
    return 0; // no /proc here
  }
  let killed = 0;
  for (const pid of pids) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let content: Buffer;
    try {
      content = await readFile(`/proc/${pid}/${file}`);
    } catch {
      continue; // gone meanwhile, or another user's
    }
    if (!matches(content)) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
      killed += 1;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

/**
 * SIGKILL every process whose environment holds `name=value` ({@link killProcessesWhose}): what
 * a child started in a session of its own still carries, inherited. Sweeps again while it finds
 * any, up to {@link MAX_SWEEPS} times.
 * @param name the variable's name.
 * @param value its value, unique to what is to be ended.
 * @returns how many processes were killed.
 */
export async function killByEnvironment(name: string, value: string): Promise<number> {
  const entry = Buffer.from(`${name}=${value}\0`);
  const inside = Buffer.concat([Buffer.from([0]), entry]);
  const holds = (environ: Buffer): boolean =>
    environ.subarray(0, entry.length).equals(entry) || environ.includes(inside);
  let killed = 0;
  for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    const found = await killProcessesWhose('environ', holds);
    killed += found;
    if (found === 0) break;
  }
  return killed;
}
