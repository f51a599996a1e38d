import { basename, extname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defineTool, isDefinedTool } from '../protocol/index.ts';
import { definePack, isToolPack, type ToolPack } from '../protocol/pack.ts';
import type { Tool, ToolDefinition } from '../protocol/types.ts';

/**
 * Load the modules named in config `plugins` as tool packs. A module exports packs (objects with
 * `name` and `start`, see `ToolPack`) and/or tools made with `defineTool`, as its default export
 * (one or an array) and/or as named exports. Each exported tool is a pack of its own, named and
 * configured after the tool (`tools.<tool name>`, checked against the tool's `configSchema`).
 * `.ts` modules work too (tsx's loader is registered on demand).
 * @param plugins module paths, relative to `baseDir` unless absolute.
 * @param baseDir the folder relative paths start from.
 * @returns the packs, in module order.
 * @throws Error naming the module when it cannot be loaded or exports neither a pack nor a tool.
 */
export async function loadPlugins(
  plugins: readonly string[],
  baseDir: string,
): Promise<ToolPack[]> {
  const packs: ToolPack[] = [];
  if (plugins.some((spec) => /\.[mc]?ts$/.test(spec))) await enableTypeScript();
  for (const spec of plugins) {
    const path = isAbsolute(spec) ? spec : resolve(baseDir, spec);
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (error) {
      throw new Error(
        `plugin ${JSON.stringify(spec)} could not be loaded: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const found = new Set<unknown>();
    for (const value of Object.values(mod)) {
      for (const item of Array.isArray(value) ? value : [value]) found.add(item);
    }
    const before = packs.length;
    for (const item of found) {
      if (isDefinedTool(item) || looksLikeTool(item)) {
        const tool = (isDefinedTool(item) ? item : defineTool(item)) as Tool;
        packs.push(
          definePack({
            name: tool.name,
            description: `tool ${tool.name} from plugin ${basename(spec, extname(spec))}`,
            tools: [tool],
            ...(tool.configSchema === undefined ? {} : { configSchema: tool.configSchema }),
          }),
        );
      } else if (isToolPack(item)) {
        packs.push(item);
      }
    }
    if (packs.length === before)
      throw new Error(
        `plugin ${JSON.stringify(spec)} exports no tool pack and no tool made with defineTool`,
      );
  }
  return packs;
}

let typeScriptEnabled = false;

// The bundled daemon runs plain JavaScript; a plugin written in TypeScript needs tsx's loader.
async function enableTypeScript(): Promise<void> {
  if (typeScriptEnabled) return;
  typeScriptEnabled = true;
  const { register } = await import('tsx/esm/api');
  register();
}

// A plugin made with another copy of vaultd's protocol module (the bundled daemon loading a
// plugin that imports the sources, say) exports tools this copy did not define: recognise them by
// shape, and declare them again, which checks them and compiles the validator.
function looksLikeTool(value: unknown): value is ToolDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['name'] === 'string' &&
    typeof v['handler'] === 'function' &&
    typeof v['safety'] === 'string' &&
    (typeof v['parameters'] === 'object' || typeof v['input'] === 'object')
  );
}
