import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadConfig, sampleConfigText } from '../../config/index.ts';
import { ensureLayout, resolveLayout } from '../../vault/index.ts';
import { EXIT } from '../exit-codes.ts';
import { builtinRegistry } from '../setup.ts';
import { renderToolsMarkdown } from '../tools-md.ts';

/**
 * `vaultd init [DIR]`: the state folders, a commented `vaultd.yaml` (kept if present) and a
 * `TOOLS.md` for agents generated from the registry.
 * @param dir the vault to create or complete.
 */
export async function runInit(dir: string): Promise<number> {
  const root = resolve(dir);
  const layout = resolveLayout(loadConfig({ vault: root }));
  await ensureLayout(layout);
  const configPath = join(root, 'vaultd.yaml');
  const wrote: string[] = [];
  if (!existsSync(configPath)) {
    await writeFile(configPath, sampleConfigText().replace(/^vault:.*$/m, 'vault: .'), {
      flag: 'wx',
    });
    wrote.push(configPath);
  }
  await writeFile(join(root, 'TOOLS.md'), renderToolsMarkdown(builtinRegistry().list()));
  wrote.push(join(root, 'TOOLS.md'));
  process.stdout.write(
    `vault ready at ${root}\n${wrote.map((w) => `  wrote ${w}`).join('\n')}\nstart it with: vaultd run --config ${configPath}\n`,
  );
  return EXIT.ok;
}
