import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDefinedTool, type ToolRegistry } from '../protocol/index.ts';
import type { Tool, ToolDefinition } from '../protocol/types.ts';

/**
 * Load the tool modules named in config `plugins` and register their tools. A module exports
 * tools made with `defineTool`: as its default export (one tool or an array) and/or as named
 * exports. `.ts` modules work too, since vaultd runs through tsx.
 * @param registry where the tools go.
 * @param plugins module paths, relative to `baseDir` unless absolute.
 * @param baseDir the config file's folder.
 * @returns the names of the tools registered.
 * @throws Error naming the module when it cannot be loaded or exports no tool.
 */
export async function loadPlugins(
  registry: ToolRegistry,
  plugins: readonly string[],
  baseDir: string,
): Promise<string[]> {
  const names: string[] = [];
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
    const found = new Set<Tool | ToolDefinition>();
    for (const value of Object.values(mod)) {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (isDefinedTool(item) || looksLikeTool(item)) found.add(item as Tool);
      }
    }
    if (found.size === 0)
      throw new Error(`plugin ${JSON.stringify(spec)} exports no tool made with defineTool`);
    for (const tool of found) names.push(registry.register(tool).name);
  }
  return names;
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
// shape, and let the registry declare them again, which checks them and compiles the validator.
function looksLikeTool(value: unknown): value is ToolDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['name'] === 'string' &&
    typeof v['handler'] === 'function' &&
    typeof v['safety'] === 'string' &&
    typeof v['parameters'] === 'object'
  );
}
