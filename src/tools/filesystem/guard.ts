import { isAbsolute, resolve } from 'node:path';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import type { Tool, VaultAccess } from '../../protocol/types.ts';
import { isInside } from '../../vault/access.ts';
import { readFilesystemConfig } from './config.ts';

/** The parameters of the pack's tools that name a file or folder. */
const PATH_PARAMETERS: readonly string[] = ['path', 'source', 'destination'];

/**
 * The access with the pack's own protected paths (`protected:`, e.g. vaultd's config file and
 * plugin modules kept in the vault) refused for writes, besides what the access refuses.
 * @param files the call's access.
 * @param section the pack's config.
 */
export function guardedAccess(
  files: VaultAccess,
  section: Readonly<Record<string, unknown>>,
): VaultAccess {
  const paths = readFilesystemConfig(section).protectedPaths;
  if (paths.length === 0) return files;
  return {
    ...files,
    async resolve(path, mode) {
      const resolved = await files.resolve(path, mode);
      if (mode !== 'write') return resolved;
      const vault = files.roots[0]?.path;
      for (const p of paths) {
        const lexical = isAbsolute(p) || vault === undefined ? resolve(p) : resolve(vault, p);
        const real = await files.resolve(lexical, 'read').catch(() => undefined);
        for (const guarded of new Set([lexical, real?.path ?? lexical])) {
          if (isInside(resolved.path, guarded)) {
            throw new ToolError(
              'PERMISSION_DENIED',
              `${path} is protected in this vault's config (tools.filesystem.protected: ${p}); no tool may change it`,
            );
          }
        }
      }
      return resolved;
    },
  };
}

/**
 * A tool of the pack whose handler, effects and preview see the guarded access, and whose path
 * parameters (`path`, `source`, `destination`) are declared so the gate sees their canonical path.
 * @param tool the tool as declared.
 */
export function guarded<A>(tool: Tool<A>): Tool<A> {
  const { effects, preview, handler } = tool;
  return defineTool<A>({
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    required: tool.required,
    safety: tool.safety,
    categories: tool.categories,
    pathParameters: Object.keys(tool.parameters).filter((p) => PATH_PARAMETERS.includes(p)),
    readOnly: tool.readOnly,
    idempotent: tool.idempotent,
    ...(tool.cacheable === undefined ? {} : { cacheable: tool.cacheable }),
    ...(tool.timeoutMs === undefined ? {} : { timeoutMs: tool.timeoutMs }),
    ...(tool.maxOutputBytes === undefined ? {} : { maxOutputBytes: tool.maxOutputBytes }),
    ...(effects === undefined
      ? {}
      : {
          effects:
            typeof effects === 'function'
              ? (args, facts) =>
                  effects(args, { ...facts, files: guardedAccess(facts.files, facts.config) })
              : effects,
        }),
    ...(preview === undefined
      ? {}
      : {
          preview: (args, ctx) =>
            preview(args, { ...ctx, files: guardedAccess(ctx.files, ctx.config) }),
        }),
    handler: (args, ctx) => handler(args, { ...ctx, files: guardedAccess(ctx.files, ctx.config) }),
  });
}
