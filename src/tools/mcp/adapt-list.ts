import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { Tool } from '../../protocol/types.ts';
import { makeUntrustedCompiler } from '../../protocol/untrusted-schema.ts';
import { adaptTool } from './adapt-tool.ts';
import type { McpConnection } from './connection.ts';

/** Tools of one server vaultd takes; the rest of its list is left out, logged. */
export const MAX_TOOLS_PER_SERVER = 1000;
/** Characters of a tool's name on its server (the MCP specification asks for at most 128). */
const MAX_TOOL_NAME = 128;
/**
 * Characters of a tool's input and output schemas together, as JSON. Ajv compiles a schema on
 * the main thread in time that grows with it (and faster than it with `pattern`s): 32 KiB take
 * up to about 0.1 s, a 300 KB schema took 6 s and a larger one minutes, with every note waiting.
 */
export const MAX_SCHEMA_CHARS = 32 * 1024;
/**
 * Characters of schemas compiled for one listing, all tools together: a server listing a
 * thousand tools of 32 KiB each, and saying every second that its list changed, held the main
 * thread for up to 100 s a listing (a 32 KiB schema compiles in up to 0.1 s). Real servers list
 * far less (a hundred tools of a few KiB); a tool past this is left out, logged.
 */
export const MAX_LIST_SCHEMA_CHARS = 1024 * 1024;
/** Longest run of compiling before the event loop gets a turn. */
const SLICE_MS = 20;

/**
 * Declare the tools of one list a server gave (see {@link adaptTool}), each schema compiled by one
 * compiler made for this list, giving the event loop a turn between tools. A tool over the limits
 * above (its own, or the listing's once the tools before it used it up), or whose declaration
 * cannot be used, is left out, logged; the others are kept.
 * @param server the connection the tools are called through.
 * @param list the server's tool list.
 * @param logger where tools left out are said.
 */
export async function adaptToolList(
  server: McpConnection,
  list: readonly McpTool[],
  logger: Logger,
): Promise<Tool[]> {
  const compile = makeUntrustedCompiler();
  const out: Tool[] = [];
  const name = server.config.name;
  // listTools (list-tools.ts) asked for no more, and said so.
  let sliceStart = performance.now();
  let spent = 0;
  for (const tool of list.slice(0, MAX_TOOLS_PER_SERVER)) {
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    const size = schemaChars(tool);
    const problem = limitBroken(tool, size, spent);
    if (problem !== undefined) {
      logger.warn(
        { server: name, tool: String(tool.name).slice(0, MAX_TOOL_NAME) },
        `MCP tool left out: ${problem}`,
      );
      continue;
    }
    spent += size;
    try {
      out.push(adaptTool(server, tool, compile));
    } catch (error) {
      logger.warn(
        { err: error, server: name, tool: tool.name },
        'MCP tool left out: its declaration is not usable',
      );
    }
  }
  return out;
}

/** Characters of a tool's input and output schemas as JSON; NaN when they are nested too deep. */
function schemaChars(tool: McpTool): number {
  try {
    return JSON.stringify(tool.inputSchema).length + JSON.stringify(tool.outputSchema ?? {}).length;
  } catch {
    return Number.NaN;
  }
}

/**
 * Why a tool is left out, if it is: its name, its schemas' size (`size`), or the listing's schemas
 * with it (`spent` by the tools before it).
 */
function limitBroken(tool: McpTool, size: number, spent: number): string | undefined {
  if (typeof tool.name !== 'string' || tool.name.length > MAX_TOOL_NAME) {
    return `its name is longer than ${MAX_TOOL_NAME} characters`;
  }
  if (Number.isNaN(size)) return 'its schemas are nested too deep';
  if (size > MAX_SCHEMA_CHARS) {
    return `its schemas take ${size} characters, more than the ${MAX_SCHEMA_CHARS} vaultd compiles`;
  }
  if (spent + size > MAX_LIST_SCHEMA_CHARS) {
    return `the server's schemas before it take ${spent} characters, and with it more than the ${MAX_LIST_SCHEMA_CHARS} vaultd compiles for one listing`;
  }
  return undefined;
}
