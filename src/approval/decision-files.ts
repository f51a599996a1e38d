import { link, mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REQUEST_ID_PATTERN, type RequestDecision } from './requests.ts';

/** Folder (inside the state folder) where other processes hand decisions to the daemon. */
export const DECISIONS_DIR = 'decisions';

/** A decision handed over by another process (the CLI), waiting for the daemon. */
export interface SubmittedDecision {
  readonly id: string;
  readonly decision: RequestDecision;
  /** Absolute path of its file, to remove once applied. */
  readonly path: string;
}

/**
 * Hand a decision to the daemon: `<stateDir>/decisions/<request id>.json`, created whole and
 * exclusively (a second decision for the same request finds the name taken). The daemon applies
 * it to the request when it runs, or at its next start.
 * @param stateDir the vault's state directory.
 * @param id the request id.
 * @param decision what was decided.
 * @returns false when a decision for this request is already waiting.
 */
export async function submitDecision(
  stateDir: string,
  id: string,
  decision: RequestDecision,
): Promise<boolean> {
  if (!REQUEST_ID_PATTERN.test(id)) throw new TypeError(`not a request id: ${JSON.stringify(id)}`);
  const dir = join(stateDir, DECISIONS_DIR);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${id}.${process.pid}.tmp`);
  await writeFile(temp, `${JSON.stringify({ id, decision })}\n`, { mode: 0o600, flush: true });
  try {
    await link(temp, join(dir, `${id}.json`));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/**
 * The decision already waiting for the daemon for this request, if any (read only, for the CLI).
 * @param stateDir the vault's state directory.
 * @param id the request id.
 * @returns the waiting decision, or null when none waits or its file cannot be read.
 */
export async function readWaitingDecision(
  stateDir: string,
  id: string,
): Promise<RequestDecision | null> {
  if (!REQUEST_ID_PATTERN.test(id)) return null;
  try {
    const value = JSON.parse(
      await readFile(join(stateDir, DECISIONS_DIR, `${id}.json`), 'utf8'),
    ) as {
      decision?: RequestDecision;
    };
    const kind = value.decision?.kind;
    return kind === 'approve' || kind === 'reject' ? (value.decision as RequestDecision) : null;
  } catch {
    return null;
  }
}

/**
 * The decisions waiting in `<stateDir>/decisions/`; files that are not decisions are reported
 * through `onBad` and removed.
 * @param stateDir the vault's state directory.
 * @param onBad told about a file that could not be read as a decision.
 */
export async function readSubmittedDecisions(
  stateDir: string,
  onBad: (path: string, problem: string) => void = () => undefined,
): Promise<SubmittedDecision[]> {
  const dir = join(stateDir, DECISIONS_DIR);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const out: SubmittedDecision[] = [];
  for (const name of names.sort()) {
    if (!name.endsWith('.json')) continue;
    const path = join(dir, name);
    try {
      const value = JSON.parse(await readFile(path, 'utf8')) as {
        id?: unknown;
        decision?: RequestDecision;
      };
      const d = value.decision;
      if (
        typeof value.id !== 'string' ||
        `${value.id}.json` !== name ||
        d === undefined ||
        (d.kind !== 'approve' && d.kind !== 'reject') ||
        (d.channel !== 'cli' && d.channel !== 'http')
      ) {
        throw new Error('not a decision of vaultd approve/reject');
      }
      out.push({ id: value.id, decision: d, path });
    } catch (error) {
      // Taken meanwhile (a decision file is applied once, then removed): nothing to say.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      onBad(path, (error as Error).message);
      await unlink(path).catch(() => undefined);
    }
  }
  return out;
}
