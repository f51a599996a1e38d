// A git pack harness: real repositories in a temp folder, the pack's tools called as the executor
// calls them (normalize, effects, preview, handler), file access with the vault's protections.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { effectsOf } from '../../../src/protocol/effects.ts';
import type { PackRoot } from '../../../src/protocol/pack.ts';
import type { Effects, Preview, Tool, ToolContext } from '../../../src/protocol/types.ts';
import { RuntimeHolder } from '../../../src/tools/git/common.ts';
import { gitTools } from '../../../src/tools/git/index.ts';
import { createVaultAccess, type SharedAccess } from '../../../src/vault/access.ts';
import { makeContext } from '../context.ts';

/** Run git for a test's setup (the test's own git, with a fixed identity). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 'test@example.com',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 'test@example.com',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A temp world: a vault (a git repository), a bare remote in a second root, and a way out. */
export interface GitWorld {
  /** Real path of the temp folder holding everything. */
  readonly base: string;
  readonly vault: string;
  /** A second root, holding `remote.git`. */
  readonly remotes: string;
  /** A folder outside every root. */
  readonly outside: string;
  readonly tools: Map<string, Tool>;
  config: Record<string, unknown>;
  files(): Promise<SharedAccess>;
  /**
   * Normalise, decide the effects, and run the handler, as the executor would.
   * @param effects the gate's effects when they were decided earlier; default decided now.
   */
  call(name: string, args: Record<string, unknown>, effects?: Effects): Promise<unknown>;
  effects(name: string, args: Record<string, unknown>): Promise<Effects>;
  preview(name: string, args: Record<string, unknown>): Promise<Preview>;
  cleanup(): Promise<void>;
}

/**
 * Make a world: the vault is a repository with one commit (`README.md`, `notes/a.md`) and a
 * remote `origin` (a bare repository in the `remotes` root) that has that commit.
 * @param config the `tools.git` section (roots are added).
 */
export async function makeWorld(config: Record<string, unknown> = {}): Promise<GitWorld> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'vaultd-git-')));
  const vault = join(base, 'vault');
  const remotes = join(base, 'remotes');
  const outside = join(base, 'outside');
  const home = join(base, 'home');
  for (const dir of [vault, remotes, outside, home, join(vault, '.vaultd'), join(vault, 'notes')]) {
    await mkdir(dir, { recursive: true });
  }
  git(base, 'init', '-q', '-b', 'main', vault);
  await writeFile(join(vault, 'README.md'), '# Vault\n');
  await writeFile(join(vault, 'notes', 'a.md'), 'alpha\n');
  await writeFile(join(vault, '.gitignore'), '.vaultd/\n');
  git(vault, 'add', '.');
  git(vault, 'commit', '-q', '-m', 'initial');
  git(base, 'init', '-q', '--bare', '-b', 'main', join(remotes, 'remote.git'));
  git(vault, 'remote', 'add', 'origin', join(remotes, 'remote.git'));
  git(vault, 'push', '-q', 'origin', 'main');
  const holder = new RuntimeHolder();
  holder.set({ home, state: join(vault, '.vaultd') });
  const tools = new Map(gitTools(holder).map((t) => [t.name, t]));
  const world: GitWorld = {
    base,
    vault,
    remotes,
    outside,
    tools,
    config: { ...config },
    async files() {
      const extra: PackRoot[] = [
        { name: 'remotes', path: remotes, writable: true },
        ...((world.config['roots'] as PackRoot[] | undefined) ?? []),
      ];
      return createVaultAccess({
        roots: [{ name: 'vault', path: vault, writable: true }, ...extra],
        protectedForWrite: ['.vaultd', 'In_Progress', 'Approved', '.git', '.obsidian'].map((p) =>
          join(vault, p),
        ),
        protectedForRead: [join(vault, '.vaultd')],
      });
    },
    async call(name, args, decided) {
      const tool = toolOf(world, name);
      const normal = tool.normalize === undefined ? args : tool.normalize(args, world.config);
      const { ctx: base, processes } = makeContext(world.config, vault);
      const files = await world.files();
      // The gate's effects, as the executor passes them.
      const effects = decided ?? (await effectsOf(tool, normal, { config: world.config, files }));
      const ctx: ToolContext = { ...base, files, effects };
      try {
        return await tool.handler(normal, ctx);
      } finally {
        await processes.idle(10_000);
      }
    },
    async effects(name, args) {
      const tool = toolOf(world, name);
      const normal = tool.normalize === undefined ? args : tool.normalize(args, world.config);
      return effectsOf(tool, normal, { config: world.config, files: await world.files() });
    },
    async preview(name, args) {
      const tool = toolOf(world, name);
      const normal = tool.normalize === undefined ? args : tool.normalize(args, world.config);
      const made = await tool.preview?.(normal, {
        config: world.config,
        vault,
        files: await world.files(),
        signal: AbortSignal.timeout(5_000),
      });
      if (made === undefined) throw new Error(`${name} made no preview`);
      return typeof made === 'string' ? { kind: 'text', text: made } : made;
    },
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
  return world;
}

function toolOf(world: GitWorld, name: string): Tool {
  const tool = world.tools.get(name);
  if (tool === undefined) throw new Error(`no tool ${name}`);
  return tool;
}
