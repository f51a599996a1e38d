import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { forEachLimit } from './wait-until.ts';
import { CONFIG_DEFAULTS } from '../../src/config/defaults.ts';

/**
 * The bench's test-only tools, loaded through the config's `plugins` key: bench/plugin/ compiled
 * to one JavaScript module (`vaultd` imports resolve to the running daemon), as a published
 * plugin would be shipped; a TypeScript plugin would make every daemon start tsx as well.
 */
export const PLUGIN_PATH = join(
  new URL('../../node_modules/.cache/vaultd-bench', import.meta.url).pathname,
  'bench-tools.mjs',
);
buildSync({
  entryPoints: [new URL('../plugin/bench-tools.ts', import.meta.url).pathname],
  outfile: PLUGIN_PATH,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  external: ['vaultd'],
  logLevel: 'warning',
});

/** The folders vaultd makes in a vault (SPEC section 1). */
const FOLDERS = (({ inbox, in_progress, pending, approved, rejected, done, failed, logs }) => [
  inbox,
  in_progress,
  pending,
  approved,
  rejected,
  done,
  failed,
  logs,
])(CONFIG_DEFAULTS.folders);

const live = new Set<string>();

/** A temp vault under `os.tmpdir()` with a config file next to it. */
export interface BenchVault {
  /** The folder holding the config file and the vault. */
  readonly dir: string;
  /** The vault root (`<dir>/vault`). */
  readonly root: string;
  readonly configPath: string;
  /** Absolute path of a vault folder. */
  folder(name: string): string;
  /** Write `count` notes into a folder in parallel, without fsync; `text(i)` makes note i. */
  fill(
    folder: string,
    count: number,
    name: (i: number) => string,
    text: (i: number) => string,
  ): Promise<void>;
  /** Drop a note into the inbox atomically (write a temp file outside it, rename it in). */
  drop(name: string, text: string): Promise<void>;
  /** How many `.md` files a folder holds. */
  count(folder: string): Promise<number>;
  remove(): Promise<void>;
}

/**
 * Make a temp vault with the bench plugin configured.
 * @param label part of the temp folder's name.
 * @param extraYaml config lines appended after `vault` and `plugins` (e.g. `log:\n  level: warn\n`).
 * @param options `plugin: false` leaves the bench plugin out: the config is then vaultd's default
 *   configuration (SPEC section 10) apart from `extraYaml`.
 */
export async function makeBenchVault(
  label: string,
  extraYaml = '',
  options: { plugin?: boolean } = {},
): Promise<BenchVault> {
  const dir = await mkdtemp(join(tmpdir(), `vaultd-bench-${label}-`));
  live.add(dir);
  const root = join(dir, 'vault');
  for (const f of FOLDERS) await mkdir(join(root, f), { recursive: true });
  const configPath = join(dir, 'vaultd.yaml');
  const plugins = options.plugin === false ? '' : `plugins:\n  - ${JSON.stringify(PLUGIN_PATH)}\n`;
  await writeFile(configPath, `vault: vault\n${plugins}${extraYaml}`);
  let seq = 0;
  const folder = (name: string): string => join(root, name);
  return {
    dir,
    root,
    configPath,
    folder,
    async fill(name, count, fileName, text) {
      const target = folder(name);
      const indexes = Array.from({ length: count }, (_, i) => i);
      await forEachLimit(indexes, 128, (i) => writeFile(join(target, fileName(i)), text(i)));
    },
    async drop(name, text) {
      const temp = join(dir, `drop-${seq++}.tmp`);
      await writeFile(temp, text);
      await rename(temp, join(root, 'Needs_Action', name));
    },
    async count(name) {
      if (!existsSync(folder(name))) return 0;
      return (await readdir(folder(name))).filter((n) => n.endsWith('.md')).length;
    },
    async remove() {
      live.delete(dir);
      await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/** Remove every temp vault not removed yet (at the end of the run, or on an interrupt). */
export async function removeAllVaults(): Promise<void> {
  for (const dir of [...live]) {
    live.delete(dir);
    await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
  }
}

/** Flush dirty pages (`sync`), so that writing the fixtures does not bill the next measurement. */
export function flushPageCache(): void {
  try {
    execFileSync('sync');
  } catch {
    // No sync binary: the figures may then include some write-back of the fixtures.
  }
}
