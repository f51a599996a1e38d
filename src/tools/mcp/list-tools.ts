import { createHash, randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { MAX_TOOLS_PER_SERVER } from './adapt-list.ts';

/**
 * Characters of tool declarations (as JSON, each as the server sent it, a long description at its
 * full length) that vaultd reads of one listing. Paging stops once it is spent. A page may take
 * 10 MiB and a server may send a hundred: a server listing one tool of 9 MB a page made vaultd
 * hold about 1 GB, again at every `tools/list_changed`. Real servers list far less (a hundred
 * tools of a few KiB).
 */
export const MAX_LISTING_CHARS = 2 * 1024 * 1024;
/** Characters of a tool's description (and title) that vaultd keeps; the rest is cut, saying so. */
export const MAX_DESCRIPTION_CHARS = 4000;
/** Pages of one listing vaultd asks for. */
const MAX_PAGES = 100;
/** Names of tools left out that a log line quotes. */
const NAMES_QUOTED = 20;

/** A server's tool list as vaultd keeps it. */
export interface ToolListing {
  /** The tools, each with only what vaultd uses, descriptions cut. */
  readonly tools: readonly McpTool[];
  /** A digest of `tools`, to tell a new listing from the last one without comparing them. */
  readonly hash: string;
}

/**
 * List a server's tools, every page, within {@link MAX_LISTING_CHARS} and
 * {@link MAX_TOOLS_PER_SERVER}: the tools in the server's order while they fit; the tool that does
 * not and the rest of its page are left out, later pages are not asked for, and a log line says
 * which. Only what vaultd uses of each tool is kept (name, title, description, schemas, the
 * annotations' hints), a description or title cut at {@link MAX_DESCRIPTION_CHARS}.
 * @param client the connected client.
 * @param logger where tools left out are said.
 */
export async function listTools(client: Client, logger: Logger): Promise<ToolListing> {
  const tools: McpTool[] = [];
  const hash = createHash('sha256');
  let spent = 0;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor });
    cursor = result.nextCursor;
    // A page that fits is counted whole; of one that does not, its tools one by one, in order, as
    // long as they fit, and then the listing ends: what the page held besides spent the rest.
    const left = MAX_LISTING_CHARS - spent;
    const pageChars = jsonChars(result, left + 1);
    const overflows = pageChars > left;
    let at = 0;
    for (; at < result.tools.length && tools.length < MAX_TOOLS_PER_SERVER; at++) {
      const tool = result.tools[at] as McpTool;
      if (overflows) {
        const chars = jsonChars(tool, MAX_LISTING_CHARS - spent + 1);
        if (spent + chars > MAX_LISTING_CHARS) break;
        spent += chars;
      }
      const kept = keptOf(tool);
      tools.push(kept);
      digest(hash, kept);
    }
    if (!overflows && at === result.tools.length) {
      spent += pageChars;
      if (cursor === undefined) break;
      continue;
    }
    const names = result.tools.slice(at, at + NAMES_QUOTED).map((t) => nameOf(t));
    logger.warn(
      {
        kept: tools.length,
        left_out: result.tools.length - at,
        names,
        more_pages: cursor !== undefined,
      },
      tools.length >= MAX_TOOLS_PER_SERVER
        ? `MCP server lists more than the ${MAX_TOOLS_PER_SERVER} tools vaultd takes; the rest are left out and later pages not asked for`
        : `MCP server's tool list takes more than the ${MAX_LISTING_CHARS} characters vaultd reads of one listing; the rest is left out and later pages not asked for`,
    );
    break;
  }
  return { tools, hash: hash.digest('hex') };
}

/** What vaultd uses of a server's tool: a copy without anything else it sent. */
function keptOf(tool: McpTool): McpTool {
  const hints = tool.annotations;
  const kept: Record<string, unknown> = { name: tool.name, inputSchema: tool.inputSchema };
  if (typeof tool.title === 'string') kept['title'] = cut(tool.title);
  if (typeof tool.description === 'string') kept['description'] = cut(tool.description);
  if (tool.outputSchema !== undefined) kept['outputSchema'] = tool.outputSchema;
  if (hints !== undefined) {
    const flags: Record<string, boolean> = {};
    for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
      const value = (hints as Record<string, unknown>)[key];
      if (typeof value === 'boolean') flags[key] = value;
    }
    kept['annotations'] = flags;
  }
  return kept as McpTool;
}

function cut(text: string): string {
  return text.length > MAX_DESCRIPTION_CHARS
    ? `${text.slice(0, MAX_DESCRIPTION_CHARS)}… (cut at ${MAX_DESCRIPTION_CHARS} characters)`
    : text;
}

function nameOf(tool: McpTool): string {
  return String(tool.name).slice(0, 128);
}

/** Feed a kept tool to the listing's digest; one nested too deep to write makes it unique. */
function digest(hash: ReturnType<typeof createHash>, tool: McpTool): void {
  try {
    hash.update(JSON.stringify(tool));
  } catch {
    // Too deep to write: the listing is taken as a change each time (its tool is left out when
    // compiled, adapt-list.ts).
    hash.update(randomUUID());
  }
  hash.update('\n');
}

/**
 * Characters `value` takes as JSON, roughly (a string by its length, a number as 8), counted
 * without recursion (a value nested too deep for `JSON.stringify` is measured too) and only up to
 * `limit`: past it the count stops, and is more than `limit`.
 * @param value what a server sent, parsed.
 * @param limit where counting stops.
 */
export function jsonChars(value: unknown, limit: number): number {
  let chars = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && chars <= limit) {
    const item = stack.pop();
    if (typeof item === 'string') chars += item.length + 2;
    else if (Array.isArray(item)) {
      chars += 2 + item.length;
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === 'object') {
      chars += 2;
      for (const [key, element] of Object.entries(item)) {
        chars += key.length + 4;
        stack.push(element);
      }
    } else chars += 8;
  }
  return chars;
}
