/* eslint-disable @typescript-eslint/no-explicit-any -- results carry JSON data of many shapes */
// A temp vault with vaultd's folders, an access as the daemon builds it, and a way to call the
// filesystem tools directly (arguments validated and defaulted as the pipeline does).
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_DEFAULTS } from '../../../src/config/defaults.ts';
import { effectsOf } from '../../../src/protocol/effects.ts';
import { ToolError } from '../../../src/protocol/errors.ts';
import { isToolOutput } from '../../../src/protocol/output.ts';
import type {
  Effects,
  Preview,
  ResolvedPath,
  Tool,
  VaultAccess,
} from '../../../src/protocol/types.ts';
import { validateArguments } from '../../../src/protocol/validate.ts';
import { createVaultAccess, type RootSpec, type SharedAccess } from '../../../src/vault/access.ts';
import { resolveLayout } from '../../../src/vault/layout.ts';
import { protectedForWrite } from '../../../src/vault/protected.ts';
import { makeContext } from '../context.ts';

/** vaultd's own folders in the test vault, as the daemon protects them. */
export const VAULTD_FOLDERS = [
  'Needs_Action',
  'In_Progress',
  'Pending_Approval',
  'Approved',
  'Rejected',
  'Done',
  'Failed',
  'Logs',
];

/** Runs right after the access resolved a path: a test swaps a link in here, between check and use. */
export type ResolveHook = (
  path: string,
  mode: 'read' | 'write',
  resolved: ResolvedPath,
) => Promise<void>;

/** A sandbox: a temp folder holding the vault, a sibling `vault2`, and an outside folder. */
export interface FsSandbox {
  /** Parent of everything (real path). */
  readonly base: string;
  /** The vault (real path). */
  readonly vault: string;
  /** A folder outside every root, holding `secret.txt`. */
  readonly outside: string;
  readonly access: SharedAccess;
  /** Files the tools reported as changed. */
  readonly changed: string[];
  /**
   * Call a tool as the pipeline would: validate, then run the handler.
   * @returns content and data, or throws the ToolError.
   */
  call(
    tool: Tool<any>,
    args: Record<string, unknown>,
    afterResolve?: ResolveHook,
  ): Promise<{ content: string; data: any }>;
  /** The effects of a call. */
  effects(tool: Tool<any>, args: Record<string, unknown>): Promise<Effects>;
  /** The preview of a call. */
  preview(tool: Tool<any>, args: Record<string, unknown>): Promise<Preview>;
  cleanup(): Promise<void>;
}

/**
 * Make a sandbox; `config` is the `tools.filesystem` section.
 * @param config the pack's config.
 * @param extraRoots more roots.
 */
export async function makeSandbox(
  config: Record<string, unknown> = {},
  extraRoots: (base: string) => RootSpec[] = () => [],
): Promise<FsSandbox> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-fs-')));
  const vault = join(base, 'vault');
  const outside = join(base, 'outside');
  for (const f of VAULTD_FOLDERS) await mkdir(join(vault, f), { recursive: true });
  for (const f of ['.vaultd', '.obsidian', '.git', '.trash', 'Notes']) {
    await mkdir(join(vault, f), { recursive: true });
  }
  await writeFile(join(vault, '.vaultd', 'state.json'), '{"secret":"state"}\n');
  await writeFile(join(vault, 'Dashboard.md'), '# Dashboard\n');
  await mkdir(join(base, 'vault2'), { recursive: true });
  await writeFile(join(base, 'vault2', 'sibling.txt'), 'sibling secret\n');
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, 'secret.txt'), 'outside secret\n');
  const access = await createVaultAccess({
    roots: [{ name: 'vault', path: vault, writable: true }, ...extraRoots(base)],
    // The daemon's own list, so a folder it forgets is refused here only if the daemon refuses it.
    protectedForWrite: protectedForWrite(
      resolveLayout({ vault, folders: CONFIG_DEFAULTS.folders }),
    ),
    protectedForRead: [join(vault, '.vaultd')],
  });
  const changed: string[] = [];
  const files = access.forCall((p) => changed.push(p));
  const check = (tool: Tool<any>, args: Record<string, unknown>): Record<string, unknown> => {
    const v = validateArguments(tool as Tool<unknown>, args, config);
    if (!v.ok) throw new ToolError('INVALID_PARAMS', v.message);
    return v.args;
  };
  return {
    base,
    vault,
    outside,
    access,
    changed,
    async call(tool, args, afterResolve) {
      const checked = check(tool, args);
      const { ctx } = makeContext(config, vault);
      const hooked: VaultAccess =
        afterResolve === undefined
          ? files
          : {
              ...files,
              resolve: async (path, mode) => {
                const resolved = await files.resolve(path, mode);
                await afterResolve(path, mode, resolved);
                return resolved;
              },
            };
      const out: unknown = await (tool as Tool).handler(checked, { ...ctx, files: hooked });
      if (isToolOutput(out)) return { content: out.content, data: out.data };
      return { content: String(out), data: undefined };
    },
    async effects(tool, args) {
      return effectsOf(tool as Tool, check(tool, args), {
        config: Object.freeze({ ...config }),
        files,
      });
    },
    async preview(tool, args) {
      const made = await (tool as Tool).preview?.(check(tool, args), {
        config: Object.freeze({ ...config }),
        vault,
        files,
        signal: new AbortController().signal,
      });
      if (made === undefined) throw new Error('no preview');
      return typeof made === 'string' ? { kind: 'text', text: made } : made;
    },
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

/**
 * Assert that a promise rejects with a ToolError of this code (and message pattern).
 * @param promise the call.
 * @param code the error code.
 * @param message a pattern the message must match.
 */
export async function refused(
  promise: Promise<unknown>,
  code: string,
  message?: RegExp,
): Promise<ToolError> {
  try {
    await promise;
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    if (error.code !== code) {
      throw new Error(`expected ${code}, got ${error.code}: ${error.message}`, { cause: error });
    }
    if (message !== undefined && !message.test(error.message)) {
      throw new Error(`message ${JSON.stringify(error.message)} does not match ${message}`);
    }
    return error;
  }
  throw new Error(`expected a ${code} refusal, but the call succeeded`);
}
