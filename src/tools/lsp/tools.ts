import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { toolOutput } from '../../protocol/output.ts';
import type { Effects, ResolvedPath, Tool, ToolContext } from '../../protocol/types.ts';
import { serverFor } from './config.ts';
import {
  renderDiagnostics,
  renderHover,
  renderPlaces,
  renderSymbols,
  hoverText,
  problemLabel,
  severityName,
  symbolLabel,
  symbolKindName,
  type FileProblems,
  type Problem,
  type SymbolEntry,
} from './format.ts';
import { PlaceFinder, type LspRange, type Place } from './locations.ts';
import { toLspPosition } from './positions.ts';
import {
  openFile,
  requireServer,
  resolveExisting,
  serverCall,
  type LspRuntime,
} from './session.ts';
import { DIAGNOSTICS_BATCH } from './server.ts';
import { filesUnder, findWorkspaceRoot } from './workspace.ts';

/** Locations and symbols kept in one result, at most. */
const MAX_ITEMS = 200;

const READ_ONLY: Effects = { safety: 'safe', readOnly: true, idempotent: true };

const PATH = {
  type: 'string',
  minLength: 1,
  maxLength: 4096,
  description: 'a file inside the vault (vault-relative), or an absolute path inside a root',
};
const LINE = { type: 'integer', minimum: 1, description: 'line, 1 for the first' };
const COLUMN = {
  type: 'integer',
  minimum: 1,
  description: 'column in characters (an emoji or an accented letter is one), 1 for the first',
};

/**
 * The pack's five tools, reading the running pack through `runtime` (undefined before it starts).
 * @param runtime the pack's config and servers, once started.
 */
export function createLspTools(runtime: () => LspRuntime | undefined): Tool[] {
  const need = (): LspRuntime => {
    const rt = runtime();
    if (rt === undefined) throw new ToolError('EXECUTION_FAILED', 'the lsp pack is not running');
    return rt;
  };
  // A cold project is parsed and checked before the first answer: more than the daemon's default.
  const common = {
    ...READ_ONLY,
    categories: ['code'],
    timeoutMs: 90_000,
    pathParameters: ['path'],
  };

  const diagnostics = defineTool<{ path: string }>({
    ...common,
    name: 'diagnostics',
    description:
      'Errors and warnings a language server finds in a source file (or every source file of a folder, up to a cap), for the file as it is on disk now: file:line:column, severity, code and message, with the source line.',
    parameters: { path: PATH },
    required: ['path'],
    handler: (args, ctx) => runDiagnostics(need(), args.path, ctx),
  });

  const symbols = defineTool<{ path?: string; query?: string }>({
    ...common,
    name: 'symbols',
    description:
      'The symbols (functions, classes, variables…) of a source file given by path, or, with query, the symbols matching it across the workspace of path (the vault when left out): name, kind, place, container.',
    parameters: {
      path: { ...PATH, description: 'a file for its symbols, or the folder to search with query' },
      query: { type: 'string', minLength: 1, maxLength: 200, description: 'a name to search' },
    },
    handler: (args, ctx) => runSymbols(need(), args, ctx),
  });

  const hover = defineTool<{ path: string; line: number; column: number }>({
    ...common,
    name: 'hover',
    description:
      'The type and documentation of what is at a line and column of a source file, as an editor shows on hover.',
    parameters: { path: PATH, line: LINE, column: COLUMN },
    required: ['path', 'line', 'column'],
    handler: (args, ctx) => runHover(need(), args, ctx),
  });

  const definition = defineTool<{ path: string; line: number; column: number }>({
    ...common,
    name: 'definition',
    description:
      'Where what is at a line and column of a source file is defined (also in other files): locations with their line of source.',
    parameters: { path: PATH, line: LINE, column: COLUMN },
    required: ['path', 'line', 'column'],
    handler: (args, ctx) => runLocations(need(), 'definition', args, ctx),
  });

  const references = defineTool<{
    path: string;
    line: number;
    column: number;
    include_declaration?: boolean;
  }>({
    ...common,
    name: 'references',
    description:
      'Every use of what is at a line and column of a source file, across its project: locations with their line of source.',
    parameters: {
      path: PATH,
      line: LINE,
      column: COLUMN,
      include_declaration: {
        type: 'boolean',
        default: true,
        description: 'also list the declaration itself',
      },
    },
    required: ['path', 'line', 'column'],
    handler: (args, ctx) => runLocations(need(), 'references', args, ctx),
  });

  return [diagnostics, symbols, hover, definition, references];
}

async function runDiagnostics(rt: LspRuntime, path: string, ctx: ToolContext): Promise<unknown> {
  const { resolved, directory } = await resolveExisting(ctx, path, 'any');
  let files = [resolved];
  let more = false;
  if (directory) {
    const extensions = new Set(rt.config.servers.flatMap((s) => s.extensions));
    const found = await filesUnder(resolved.path, extensions, rt.config.maxFiles);
    more = found.more;
    files = [];
    for (const file of found.files) {
      try {
        files.push(await ctx.files.resolve(file, 'read'));
      } catch {
        // A link out of the roots, or vaultd's state: not looked at.
      }
    }
  } else {
    requireServer(rt.config, resolved, path);
  }
  const finder = new PlaceFinder(ctx.files);
  const results: FileProblems[] = [];
  // A batch of files is opened, then asked for its diagnostics, before the next: a server keeps
  // MAX_OPEN_DOCUMENTS open, and a folder of more (max_files goes to 1,000) closed its first files
  // before they were asked for, whose diagnostics then never came (a limit the last notes listed).
  for (let start = 0; start < files.length; start += DIAGNOSTICS_BATCH) {
    await diagnoseBatch(rt, ctx, files.slice(start, start + DIAGNOSTICS_BATCH), finder, results, {
      before: start,
      total: files.length,
    });
  }
  const shown = ctx.files.display(resolved);
  const data = {
    path: shown,
    more_files: more,
    counts: countSeverities(results),
    files: results.map((r) => ({
      path: r.path,
      answered: r.answered,
      problems: r.problems.length,
      left_out: r.leftOut,
    })),
    places: results.flatMap((r) => r.problems),
  };
  return toolOutput(renderDiagnostics(shown, directory, results, more), data);
}

/**
 * Open a batch of files, then ask for and place each one's diagnostics, added to `results`.
 * Each file opened waits for its diagnostics until asked for them (`diagnostics` ends its own
 * wait): a batch that ends before (a later file that cannot be opened, a failed request, an
 * abort) ends the waits of the files it did not come to, or the server's publishes of them were
 * kept for as long as they stayed open (review finding).
 */
async function diagnoseBatch(
  rt: LspRuntime,
  ctx: ToolContext,
  files: readonly ResolvedPath[],
  finder: PlaceFinder,
  results: FileProblems[],
  count: { before: number; total: number },
): Promise<void> {
  const opened: Awaited<ReturnType<typeof openFile>>[] = [];
  let asked = 0;
  try {
    for (const file of files) {
      const server = serverFor(rt.config, file.path);
      if (server === undefined) continue;
      const open = await openFile(rt, ctx, file, server, true);
      finder.know(file.path, open.lines);
      opened.push(open);
      ctx.progress({
        message: `opened ${count.before + opened.length} of ${count.total} files`,
      });
    }
    for (const open of opened) {
      asked++;
      const report = await serverCall(ctx, () =>
        open.server.diagnostics(open.uri, open.mark, open.version, ctx.signal),
      );
      const problems: Problem[] = [];
      for (const item of report?.items ?? []) {
        const place = await finder.place(open.uri, item.range);
        if (place === undefined) continue;
        const fields = {
          severity: severityName(item.severity),
          code: item.code === undefined || item.code === null ? null : String(item.code),
          source: typeof item.source === 'string' ? item.source : null,
          message: String(item.message),
        };
        problems.push({ ...place, label: problemLabel(fields), ...fields });
      }
      results.push({
        path: ctx.files.display(open.resolved),
        answered: report !== undefined,
        problems,
        leftOut: report === undefined ? 0 : report.total - report.items.length,
      });
    }
  } finally {
    for (const open of opened.slice(asked)) open.server.release(open.uri);
  }
}

function countSeverities(results: readonly FileProblems[]): Record<string, number> {
  const counts: Record<string, number> = { error: 0, warning: 0, information: 0, hint: 0 };
  for (const file of results) {
    for (const p of file.problems) counts[p.severity] = (counts[p.severity] ?? 0) + 1;
  }
  return counts;
}

async function runSymbols(
  rt: LspRuntime,
  args: { path?: string; query?: string },
  ctx: ToolContext,
): Promise<unknown> {
  if (args.query === undefined) {
    if (args.path === undefined) {
      throw new ToolError('INVALID_PARAMS', 'give path (a file) for its symbols, or query');
    }
    return documentSymbols(rt, args.path, ctx);
  }
  return workspaceSymbols(rt, args.path ?? '.', args.query, ctx);
}

interface DocumentSymbol {
  name: string;
  kind: number;
  detail?: string;
  range: LspRange;
  selectionRange?: LspRange;
  children?: DocumentSymbol[];
}

interface SymbolInformation {
  name: string;
  kind: number;
  containerName?: string;
  location: { uri: string; range?: LspRange };
}

async function documentSymbols(rt: LspRuntime, path: string, ctx: ToolContext): Promise<unknown> {
  const { resolved } = await resolveExisting(ctx, path, 'file');
  const server = requireServer(rt.config, resolved, path);
  const open = await openFile(rt, ctx, resolved, server);
  const finder = new PlaceFinder(ctx.files);
  finder.know(resolved.path, open.lines);
  const answer = await serverCall(ctx, () =>
    open.server.request<(DocumentSymbol | SymbolInformation)[] | null>(
      'textDocument/documentSymbol',
      { textDocument: { uri: open.uri } },
      ctx.signal,
    ),
  );
  const entries: SymbolEntry[] = [];
  const visit = async (symbol: DocumentSymbol, container: string | null): Promise<void> => {
    if (entries.length >= MAX_ITEMS) return;
    const place = await finder.place(open.uri, symbol.selectionRange ?? symbol.range);
    if (place !== undefined) {
      const fields = { name: String(symbol.name), kind: symbolKindName(symbol.kind), container };
      entries.push({ ...place, label: symbolLabel(fields), ...fields });
    }
    for (const child of symbol.children ?? []) {
      await visit(child, container === null ? symbol.name : `${container}.${symbol.name}`);
    }
  };
  for (const item of answer ?? []) {
    if ('location' in item) {
      const entry = await symbolInformation(finder, item);
      if (entry !== undefined && entries.length < MAX_ITEMS) entries.push(entry);
    } else {
      await visit(item, null);
    }
  }
  const shown = ctx.files.display(resolved);
  const data = { path: shown, places: entries, truncated: entries.length >= MAX_ITEMS };
  return toolOutput(renderSymbols(`Symbols of ${shown}`, entries, 0), data);
}

async function symbolInformation(
  finder: PlaceFinder,
  item: SymbolInformation,
): Promise<SymbolEntry | undefined> {
  const place = await finder.place(item.location?.uri, item.location?.range);
  if (place === undefined) return undefined;
  const container =
    typeof item.containerName === 'string' && item.containerName !== '' ? item.containerName : null;
  const fields = { name: String(item.name), kind: symbolKindName(item.kind), container };
  return { ...place, label: symbolLabel(fields), ...fields };
}

async function workspaceSymbols(
  rt: LspRuntime,
  path: string,
  query: string,
  ctx: ToolContext,
): Promise<unknown> {
  const { resolved, directory } = await resolveExisting(ctx, path, 'any');
  // A server answers for the projects it has open: open one file of each kind in the scope.
  let seeds = [resolved];
  if (directory) {
    seeds = [];
    // One file of each workspace in the folder (a vault may hold several projects), at most as
    // many workspaces as servers may run at once.
    for (const server of rt.config.servers) {
      const found = await filesUnder(resolved.path, new Set(server.extensions), rt.config.maxFiles);
      const workspaces = new Set<string>();
      for (const file of found.files) {
        if (seeds.length >= rt.config.maxServers) break;
        let seed;
        try {
          seed = await ctx.files.resolve(file, 'read');
        } catch {
          continue;
        }
        const root = await findWorkspaceRoot(seed.path, false, seed.root.path, server.rootMarkers);
        if (workspaces.has(root)) continue;
        workspaces.add(root);
        seeds.push(seed);
      }
    }
    if (seeds.length === 0) {
      throw new ToolError(
        'INVALID_PARAMS',
        `${path} holds no file any configured language server serves`,
      );
    }
  } else {
    requireServer(rt.config, resolved, path);
  }
  const finder = new PlaceFinder(ctx.files);
  const entries: SymbolEntry[] = [];
  let outOfScope = 0;
  for (const seed of seeds) {
    const server = requireServer(rt.config, seed, path);
    const open = await openFile(rt, ctx, seed, server);
    // A folder limits the search to itself; a file stands for its whole workspace.
    const scope = directory ? resolved.path : open.server.options.root;
    const answer = await serverCall(ctx, () =>
      open.server.request<SymbolInformation[] | null>('workspace/symbol', { query }, ctx.signal),
    );
    for (const item of answer ?? []) {
      if (entries.length >= MAX_ITEMS) break;
      const inScope = await finder.resolve(item.location?.uri);
      if (inScope === undefined) continue;
      if (!isUnder(inScope.path, scope)) {
        outOfScope += 1;
        continue;
      }
      const entry = await symbolInformation(finder, item);
      if (entry !== undefined) entries.push(entry);
    }
  }
  const shown = ctx.files.display(resolved);
  const data = {
    path: shown,
    query,
    places: entries,
    outside_roots: finder.outside,
    outside_path: outOfScope,
    truncated: entries.length >= MAX_ITEMS,
  };
  return toolOutput(
    renderSymbols(`Symbols matching "${query}" in ${shown}`, entries, finder.outside),
    data,
  );
}

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

async function runHover(
  rt: LspRuntime,
  args: { path: string; line: number; column: number },
  ctx: ToolContext,
): Promise<unknown> {
  const { resolved } = await resolveExisting(ctx, args.path, 'file');
  const server = requireServer(rt.config, resolved, args.path);
  const open = await openFile(rt, ctx, resolved, server);
  const position = toLspPosition(open.lines, args);
  const answer = await serverCall(ctx, () =>
    open.server.request<{ contents?: unknown; range?: LspRange } | null>(
      'textDocument/hover',
      { textDocument: { uri: open.uri }, position },
      ctx.signal,
    ),
  );
  const text = hoverText(answer?.contents);
  const shown = ctx.files.display(resolved);
  const source = (open.lines[args.line - 1] ?? '').trim();
  const data = { path: shown, line: args.line, column: args.column, text, source };
  return toolOutput(renderHover(shown, args.line, args.column, source, text), data);
}

interface LocationLink {
  targetUri: string;
  targetRange: LspRange;
  targetSelectionRange?: LspRange;
}

async function runLocations(
  rt: LspRuntime,
  kind: 'definition' | 'references',
  args: { path: string; line: number; column: number; include_declaration?: boolean },
  ctx: ToolContext,
): Promise<unknown> {
  const { resolved } = await resolveExisting(ctx, args.path, 'file');
  const server = requireServer(rt.config, resolved, args.path);
  const open = await openFile(rt, ctx, resolved, server);
  const position = toLspPosition(open.lines, args);
  const params =
    kind === 'references'
      ? {
          textDocument: { uri: open.uri },
          position,
          context: { includeDeclaration: args.include_declaration !== false },
        }
      : { textDocument: { uri: open.uri }, position };
  const answer = await serverCall(ctx, () =>
    open.server.request<unknown>(`textDocument/${kind}`, params, ctx.signal),
  );
  const list = (Array.isArray(answer) ? answer : answer === null ? [] : [answer]) as (
    { uri: string; range: LspRange } | LocationLink
  )[];
  const finder = new PlaceFinder(ctx.files);
  finder.know(resolved.path, open.lines);
  const places: Place[] = [];
  for (const item of list) {
    if (places.length >= MAX_ITEMS) break;
    const place =
      'targetUri' in item
        ? await finder.place(item.targetUri, item.targetSelectionRange ?? item.targetRange)
        : await finder.place(item?.uri, item?.range);
    if (place !== undefined) places.push(place);
  }
  const shown = ctx.files.display(resolved);
  const data = {
    path: shown,
    line: args.line,
    column: args.column,
    places,
    outside_roots: finder.outside,
    truncated: places.length >= MAX_ITEMS,
  };
  const title =
    kind === 'definition'
      ? `Definition of what is at ${shown}:${args.line}:${args.column}`
      : `References to what is at ${shown}:${args.line}:${args.column}`;
  return toolOutput(renderPlaces(title, places, finder.outside), data);
}
