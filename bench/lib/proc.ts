import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let clockTicks: number | undefined;

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`, usually 100). */
export function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * Resident set size of a process in MB, from `VmRSS` in /proc/<pid>/status.
 * @param pid the process.
 */
export function readRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (match === null) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat.
 * @param pid the process.
 */
export function readCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / clockTicksPerSecond();
}

/**
 * Inotify watches a process holds: the `inotify wd:` lines of its /proc/<pid>/fdinfo entries.
 * @param pid the process.
 */
export function countInotifyWatches(pid: number): number {
  let count = 0;
  for (const fd of readdirSync(`/proc/${pid}/fdinfo`)) {
    let info: string;
    try {
      info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // the fd closed between the listing and the read
    }
    for (const line of info.split('\n')) if (line.startsWith('inotify wd:')) count++;
  }
  return count;
}
