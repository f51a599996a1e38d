import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

/** The parts of a V8 `.cpuprofile` this summary reads. */
interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Self time of one function, summed over every node of the profile that is that function. */
export interface SelfTime {
  /** `name (file:line)`, file relative to the repository where it is in it. */
  readonly where: string;
  readonly ms: number;
  readonly percent: number;
}

/** A profile summarised. */
export interface ProfileSummary {
  readonly totalMs: number;
  /** Time the main thread was not idle (everything but the `(idle)` node). */
  readonly busyMs: number;
  readonly top: SelfTime[];
  /** Self time by area: `src/<folder>`, a package in node_modules, node internals, GC, idle. */
  readonly byArea: SelfTime[];
  /**
   * Self time of node internals and native calls charged to the nearest calling function in the
   * repository (src/ or node_modules): who asks for the `lstat`s, say.
   */
  readonly byCaller: SelfTime[];
}

/**
 * Read a `.cpuprofile` (from `node --cpu-prof`) and sum self time by function and by area.
 * @param path the profile file.
 * @param root the repository root, to shorten file names.
 * @param topN how many functions to keep; default 25.
 */
export function summariseCpuProfile(path: string, root: string, topN = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byNode = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const node = profile.samples[i] as number;
    // timeDeltas[i] is the time before sample i; the sample stands for the interval after it,
    // which the next delta measures.
    const delta = profile.timeDeltas[i + 1] ?? 0;
    byNode.set(node, (byNode.get(node) ?? 0) + delta);
  }
  const parents = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node.id);
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const byCaller = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const node of profile.nodes) {
    const us = byNode.get(node.id) ?? 0;
    if (us === 0) continue;
    totalUs += us;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') idleUs += us;
    const file = shortFile(url, root);
    const where =
      file === ''
        ? functionName || '(anonymous)'
        : `${functionName || '(anonymous)'} (${file}:${lineNumber + 1})`;
    byFunction.set(where, (byFunction.get(where) ?? 0) + us);
    const area = areaOf(url, functionName, root);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    if (area === 'node internals' || area === '(native)') {
      const caller = nearestRepoFrame(node.id, parents, nodes, root);
      if (caller !== undefined)
        byCaller.set(`${caller} → ${where}`, (byCaller.get(`${caller} → ${where}`) ?? 0) + us);
    }
  }
  const rank = (m: Map<string, number>, n: number): SelfTime[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([where, us]) => ({ where, ms: us / 1000, percent: (us / totalUs) * 100 }));
  return {
    totalMs: totalUs / 1000,
    busyMs: (totalUs - idleUs) / 1000,
    top: rank(byFunction, topN),
    byArea: rank(byArea, 30),
    byCaller: rank(byCaller, 15),
  };
}

function nearestRepoFrame(
  id: number,
  parents: ReadonlyMap<number, number>,
  nodes: ReadonlyMap<number, CpuProfile['nodes'][number]>,
  root: string,
): string | undefined {
  for (let at = parents.get(id); at !== undefined; at = parents.get(at)) {
    const frame = nodes.get(at)?.callFrame;
    if (frame === undefined) return undefined;
    const file = shortFile(frame.url, root);
    if (file.startsWith('src/') || file.startsWith('node_modules/'))
      return `${frame.functionName || '(anonymous)'} (${file})`;
  }
  return undefined;
}

function shortFile(url: string, root: string): string {
  if (url === '') return '';
  const path = url.startsWith('file://') ? new URL(url).pathname : url;
  return path.startsWith(root) ? relative(root, path) : path;
}

function areaOf(url: string, functionName: string, root: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const file = shortFile(url, root);
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg !== null) return `node_modules/${pkg[1] ?? ''}`;
  const src = /^src\/([^/]+)/.exec(file);
  if (src !== null) return `src/${src[1] ?? ''}`;
  return file;
}

/**
 * Render a summary as markdown: the areas, then the top functions by self time.
 * @param summary the summary.
 */
export function renderProfile(summary: ProfileSummary): string {
  const lines = [
    `Profiled ${(summary.totalMs / 1000).toFixed(2)} s of the main thread, ${(summary.busyMs / 1000).toFixed(2)} s of it busy (not idle).`,
    '',
    '| area | self ms | % |',
    '| --- | --- | --- |',
    ...summary.byArea.map((a) => `| ${a.where} | ${a.ms.toFixed(0)} | ${a.percent.toFixed(1)} |`),
    '',
    '| function (file:line) | self ms | % |',
    '| --- | --- | --- |',
    ...summary.top.map(
      (f) => `| ${f.where.replaceAll('|', '\\|')} | ${f.ms.toFixed(0)} | ${f.percent.toFixed(1)} |`,
    ),
    '',
    '| native or node-internal call, charged to its caller in the repo | self ms | % |',
    '| --- | --- | --- |',
    ...summary.byCaller.map(
      (f) => `| ${f.where.replaceAll('|', '\\|')} | ${f.ms.toFixed(0)} | ${f.percent.toFixed(1)} |`,
    ),
  ];
  return lines.join('\n');
}
