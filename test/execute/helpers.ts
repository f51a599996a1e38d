import { pino, type Logger } from 'pino';
import { ToolRegistry, defineTool } from '../../src/protocol/index.ts';
import type { Tool, ToolDefinition } from '../../src/protocol/index.ts';

export { waitUntil as waitFor } from '../helpers/wait-for.ts';

/** Resolve after `ms`. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A registry holding the given tools, declared with a description and `safe` unless given. */
export function registryWith(
  ...defs: (Partial<ToolDefinition> & Pick<ToolDefinition, 'name' | 'handler'>)[]
): { registry: ToolRegistry; tools: Tool[] } {
  const registry = new ToolRegistry();
  const tools = defs.map((d) =>
    registry.register(
      defineTool({ description: `The ${d.name} tool.`, parameters: {}, safety: 'safe', ...d }),
    ),
  );
  return { registry, tools };
}

/** A logger that keeps every line it writes, parsed. */
export function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'debug' },
    {
      write(line: string) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  );
  return { logger, lines };
}
