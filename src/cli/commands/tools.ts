import { toAnthropicTools, toMcpTools, toOpenAITools } from '../../protocol/index.ts';
import type { Tool } from '../../protocol/types.ts';
import type { PackInfo } from '../../tools/host.ts';
import { startPackSession } from '../pack-session.ts';
import { EXIT } from '../exit-codes.ts';
import { configFileOf, type CommonOptions } from '../main.ts';
import { builtinRegistry, loadSetup } from '../setup.ts';
import { BUILTIN_PACKS } from '../../tools/index.ts';
import { printable, printableJson } from '../printable.ts';

/**
 * `vaultd tools`: the tools a vault's config enables (its packs started, as the daemon would,
 * then stopped), as a table grouped by pack with disabled packs flagged, as JSON declarations, or
 * as schemas in a model API's format. Without a vault or config: the built-in packs' tools. What
 * the packs warn about as they start (an API key variable not set) goes to stderr.
 * @param options `--vault`, `--config`, `--json` or `--format openai|anthropic|mcp`.
 */
export async function runTools(
  options: CommonOptions & { json?: boolean; format?: 'openai' | 'anthropic' | 'mcp' },
): Promise<number> {
  const { tools, packs, warnings } = await collect(options);
  for (const warning of warnings) process.stderr.write(`vaultd: warning: ${warning}\n`);
  const print = (value: unknown): void => {
    process.stdout.write(`${printableJson(value)}\n`);
  };
  if (options.format === 'openai') print(toOpenAITools(tools));
  else if (options.format === 'anthropic') print(toAnthropicTools(tools));
  else if (options.format === 'mcp') print(toMcpTools(tools));
  else if (options.json) {
    print(
      tools.map((t) => ({
        name: t.name,
        pack: t.pack ?? null,
        description: t.description,
        safety: t.safety,
        categories: t.categories,
        readOnly: t.readOnly,
        idempotent: t.idempotent,
        inputSchema: t.inputSchema,
        ...(t.outputSchema === undefined ? {} : { outputSchema: t.outputSchema }),
      })),
    );
  } else {
    for (const pack of packs) {
      process.stdout.write(
        `${printable(`${pack.name}${pack.enabled ? '' : ' (disabled)'}: ${pack.description}`)}\n`,
      );
      for (const t of pack.enabled ? pack.tools : []) {
        const firstLine = t.description.split('\n')[0] ?? '';
        process.stdout.write(
          `${printable(`  ${t.name.padEnd(22)} ${t.safety.padEnd(10)} ${firstLine}`)}\n`,
        );
      }
    }
  }
  return EXIT.ok;
}

async function collect(
  options: CommonOptions,
): Promise<{ tools: Tool[]; packs: PackInfo[]; warnings: readonly string[] }> {
  if (options.vault === undefined && configFileOf(options) === undefined) {
    const tools = builtinRegistry().list();
    return {
      tools,
      packs: BUILTIN_PACKS.map((p) => ({
        name: p.name,
        description: p.description,
        enabled: p.enabledByDefault !== false,
        tools: tools.filter((t) => t.pack === p.name),
      })),
      warnings: [],
    };
  }
  const session = await startPackSession(await loadSetup(options));
  try {
    return {
      tools: session.registry.list(),
      packs: session.describe(),
      warnings: [...session.warnings],
    };
  } finally {
    await session.stop();
  }
}
