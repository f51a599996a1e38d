import { register } from 'node:module';
import { basename, dirname, extname, isAbsolute, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkToolSchemas, defineTool, isDefinedTool } from '../protocol/index.ts';
import { definePack, isToolPack, type ToolPack } from '../protocol/pack.ts';
import type { Tool, ToolDefinition } from '../protocol/types.ts';
import { UsageError } from './usage-error.ts';

/**
 * Load the modules named in config `plugins` as tool packs. A module exports packs (objects with
 * `name` and `start`, see `ToolPack`) and/or tools made with `defineTool`, as its default export
 * (one or an array) and/or as named exports. Each exported tool is a pack of its own, named and
 * configured after the tool (`tools.<tool name>`, checked against the tool's `configSchema`).
 * A plugin may live in any folder: `import … from 'vaultd'` in it resolves to the running vaultd
 * (its public exports, the very modules the daemon uses, so a thrown `ToolError` is recognised),
 * and `.ts` and `.js` files in the plugin's folder load as ES modules whatever package.json says
 * (TypeScript through tsx's loader, registered on demand).
 * @param plugins module paths, relative to `baseDir` unless absolute.
 * @param baseDir the folder relative paths start from.
 * @returns the packs, in module order.
 * @throws UsageError naming the module when it cannot be loaded or exports neither a pack nor a
 *   tool (exit code 2).
 */
export async function loadPlugins(
  plugins: readonly string[],
  baseDir: string,
): Promise<ToolPack[]> {
  const packs: ToolPack[] = [];
  if (plugins.some((spec) => /\.[mc]?tsx?$/.test(spec))) await enableTypeScript();
  const paths = plugins.map((spec) => (isAbsolute(spec) ? spec : resolve(baseDir, spec)));
  installPluginHooks(paths.map((path) => dirname(path)));
  for (const [index, spec] of plugins.entries()) {
    const path = paths[index] as string;
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (error) {
      throw new UsageError(
        `plugin ${JSON.stringify(spec)} could not be loaded: ${describeLoadError(error)}`,
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
        const tool = checkToolSchemas((isDefinedTool(item) ? item : defineTool(item)) as Tool);
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
      throw new UsageError(
        `plugin ${JSON.stringify(spec)} exports no tool pack and no tool made with defineTool`,
      );
  }
  return packs;
}

/** Most characters of a load error kept in the message (esbuild lists every error it found). */
const MAX_LOAD_ERROR = 600;

/**
 * Why a module could not be imported, on one line and whole: esbuild's "Transform failed with 1
 * error:" puts `file:line:column: ERROR: text` on the lines after it. Cut at
 * {@link MAX_LOAD_ERROR} characters.
 * @param error what `import()` threw.
 */
export function describeLoadError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = message
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' ');
  return text.length > MAX_LOAD_ERROR ? `${text.slice(0, MAX_LOAD_ERROR - 1)}…` : text;
}

let typeScriptEnabled = false;

// The bundled daemon runs plain JavaScript; a plugin written in TypeScript needs tsx's loader.
async function enableTypeScript(): Promise<void> {
  if (typeScriptEnabled) return;
  typeScriptEnabled = true;
  const { register } = await import('tsx/esm/api');
  register();
}

// The public entry of the vaultd that runs now: the sources' index (run through tsx), or the
// bundle's, which shares its modules with the bundled CLI (esbuild splitting).
const PUBLIC_ENTRY = import.meta.url.endsWith('.ts')
  ? new URL('../index.ts', import.meta.url).href
  : new URL('./index.mjs', import.meta.url).href;

// Module hooks (they run on the loader thread, so they are plain JavaScript): `vaultd` resolves
// to the running vaultd, and .ts/.js/.tsx files under a plugin folder (outside node_modules) are
// ES modules. Without them a plugin outside the checkout cannot find 'vaultd', and a .ts file
// with no package.json around it is taken for CommonJS.
const HOOKS = `
let target;
let roots = [];
export function initialize(data) { target = data.target; roots = data.roots; }
const inRoots = (url) => url.startsWith('file:') && !url.includes('/node_modules/') &&
  /\\.(ts|tsx|js|mts|mjs)$/.test(url) && roots.some((root) => url.startsWith(root));
export async function resolve(specifier, context, next) {
  if (specifier === 'vaultd') return { url: target, format: 'module', shortCircuit: true };
  const resolved = await next(specifier, context);
  return inRoots(resolved.url) ? { ...resolved, format: 'module' } : resolved;
}
export async function load(url, context, next) {
  return next(url, inRoots(url) ? { ...context, format: 'module' } : context);
}
`;
const hookedRoots = new Set<string>();

function installPluginHooks(folders: readonly string[]): void {
  const roots = [...new Set(folders)]
    .map((folder) => pathToFileURL(folder.endsWith(sep) ? folder : `${folder}${sep}`).href)
    .filter((root) => !hookedRoots.has(root));
  if (roots.length === 0) return;
  for (const root of roots) hookedRoots.add(root);
  register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
    parentURL: import.meta.url,
    data: { target: PUBLIC_ENTRY, roots },
  });
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
