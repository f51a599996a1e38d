import { stat } from 'node:fs/promises';
import { ToolError } from '../../protocol/errors.ts';
import type { ResolvedPath, ToolContext } from '../../protocol/types.ts';
import { languageIdOf, serverFor, type LspConfig, type ServerConfig } from './config.ts';
import { JsonRpcError } from './json-rpc.ts';
import { checkSingleLink } from '../filesystem/pinned.ts';
import { MAX_FILE_BYTES, readSource } from './locations.ts';
import type { ServerPool } from './pool.ts';
import { splitLines } from './positions.ts';
import { ServerFailure, type LanguageServer } from './server.ts';
import { findWorkspaceRoot } from './workspace.ts';

/** What the pack's tools share while it runs. */
export interface LspRuntime {
  readonly config: LspConfig;
  readonly pool: ServerPool;
}

/** A file opened in its language server, as the server sees it now. */
export interface OpenFile {
  readonly resolved: ResolvedPath;
  readonly server: LanguageServer;
  readonly uri: string;
  readonly lines: string[];
  /** Publish counter before the file's content went out (for diagnostics). */
  readonly mark: number;
  readonly version: number;
}

/**
 * Resolve a path an agent gave (inside the roots, on its real path) and check it is there.
 * @param ctx the call's context.
 * @param path the agent's path.
 * @param what `file`, `directory` or either.
 */
export async function resolveExisting(
  ctx: ToolContext,
  path: string,
  what: 'file' | 'directory' | 'any',
): Promise<{ resolved: ResolvedPath; directory: boolean }> {
  const resolved = await ctx.files.resolve(path, 'read');
  if (!resolved.exists) {
    throw new ToolError('INVALID_PARAMS', `${path} does not exist; give a path inside the vault`);
  }
  const info = await stat(resolved.path);
  const directory = info.isDirectory();
  if (!directory && !info.isFile()) {
    throw new ToolError('INVALID_PARAMS', `${path} is neither a file nor a folder`);
  }
  if (what === 'file' && directory) {
    throw new ToolError('INVALID_PARAMS', `${path} is a folder; give a file`);
  }
  if (what === 'directory' && !directory) {
    throw new ToolError('INVALID_PARAMS', `${path} is a file; give a folder`);
  }
  return { resolved, directory };
}

/**
 * The configured server for a file, or a clear refusal naming the file types there are.
 * @param config the pack's config.
 * @param resolved the file.
 * @param shown the path as the agent gave it.
 */
export function requireServer(
  config: LspConfig,
  resolved: ResolvedPath,
  shown: string,
): ServerConfig {
  const server = serverFor(config, resolved.path);
  if (server !== undefined) return server;
  const known = config.servers.map((s) => `${s.name} (${s.extensions.join(' ')})`).join('; ');
  throw new ToolError(
    'INVALID_PARAMS',
    `no language server is configured for ${shown}; the configured ones serve: ${known || 'nothing'} (an operator adds servers under tools.lsp.servers)`,
  );
}

/**
 * Open a file in its language server (started on demand for its workspace root), with its
 * content as it is on disk now.
 * @param runtime the pack's servers.
 * @param ctx the call's context.
 * @param resolved the file, resolved inside the roots.
 * @param server its configured server.
 * @param touch send the content even when the server has it already (for fresh diagnostics).
 */
export async function openFile(
  runtime: LspRuntime,
  ctx: ToolContext,
  resolved: ResolvedPath,
  server: ServerConfig,
  touch = false,
): Promise<OpenFile> {
  const source = await readSource(resolved.path);
  if (source !== undefined && 'nlink' in source) {
    // As the filesystem pack: a hard link may lead out of the roots, and nothing tells where.
    checkSingleLink(source.nlink, ctx.files.display(resolved));
  }
  if (source === undefined || !('text' in source)) {
    throw new ToolError(
      'INVALID_PARAMS',
      `${ctx.files.display(resolved)} cannot be read as text of at most ${MAX_FILE_BYTES} bytes`,
    );
  }
  const { text } = source;
  const root = await findWorkspaceRoot(
    resolved.path,
    false,
    resolved.root.path,
    server.rootMarkers,
  );
  const running = await serverCall(ctx, () => runtime.pool.get(server, root, ctx.signal));
  const synced = await serverCall(ctx, () =>
    running.sync(resolved.path, text, languageIdOf(resolved.path), ctx.signal, touch),
  );
  return { resolved, server: running, lines: splitLines(text), ...synced };
}

/**
 * Run a step that talks to a language server, turning its failures into tool errors: a server
 * that cannot start, crashed or hangs is `EXECUTION_FAILED` (recoverable when a later call may
 * work), an abort is left to the executor, an error answer names the server's message.
 * @param ctx the call's context.
 * @param step the step.
 */
export async function serverCall<T>(ctx: ToolContext, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw asToolError(ctx, error);
  }
}

function asToolError(ctx: ToolContext | undefined, error: unknown): unknown {
  if (error instanceof ToolError) return error;
  if (ctx?.signal.aborted === true) return error;
  if (error instanceof ServerFailure) {
    return new ToolError('EXECUTION_FAILED', error.message, { recoverable: error.recoverable });
  }
  if (error instanceof JsonRpcError) {
    return new ToolError('EXECUTION_FAILED', `the language server answered: ${error.message}`);
  }
  return error;
}
