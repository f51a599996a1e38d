import { existsSync, readFileSync } from 'node:fs';

// From the sources this module is src/config/sample.ts; in the bundle it is dist/vaultd.mjs.
const DEFAULT_CONFIG_FILE = [
  new URL('../../config/vaultd.yaml', import.meta.url),
  new URL('../config/vaultd.yaml', import.meta.url),
].find((url) => existsSync(url)) as URL;

/**
 * The commented sample config that `vaultd init` writes: the shipped `config/vaultd.yaml` with
 * its `vault:` line pointing at `vault`.
 * @param vault value of the `vault` key, relative to where the file is written; defaults to `.`.
 */
export function sampleConfigText(vault = '.'): string {
  const text = readFileSync(DEFAULT_CONFIG_FILE, 'utf8');
  return text.replace(/^vault: .*$/m, `vault: ${JSON.stringify(vault)}`);
}
