import { toAnthropicTools, toMcpTools, toOpenAITools } from '../../protocol/index.ts';
import { EXIT } from '../exit-codes.ts';
import type { CommonOptions } from '../main.ts';
import { builtinRegistry } from '../setup.ts';

/**
 * `vaultd tools`: a table of the registered tools, their declarations as JSON, or their schemas
 * in a model API's format.
 * @param options `--json` or `--format openai|anthropic|mcp`.
 */
export async function runTools(
  options: CommonOptions & { json?: boolean; format?: 'openai' | 'anthropic' | 'mcp' },
): Promise<number> {
  const tools = builtinRegistry().list();
  const print = (value: unknown): void => {
    process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  };
  if (options.format === 'openai') print(toOpenAITools(tools));
  else if (options.format === 'anthropic') print(toAnthropicTools(tools));
  else if (options.format === 'mcp') print(toMcpTools(tools));
  else if (options.json) {
    print(
      tools.map((t) => ({
        name: t.name,
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
    for (const t of tools) {
      const firstLine = t.description.split('\n')[0] ?? '';
      process.stdout.write(`${t.name.padEnd(20)} ${t.safety.padEnd(10)} ${firstLine}\n`);
    }
  }
  return EXIT.ok;
}
