import { defineTool, isDefinedTool } from './define-tool.ts';
import { SAFETY_LEVELS, type SafetyLevel, type Tool, type ToolDefinition } from './types.ts';

/** Which tools {@link ToolRegistry.list} returns; both filters must hold. */
export interface ToolFilter {
  /** Only tools at most this dangerous (`safe` < `cautious` < `dangerous`). */
  readonly maxSafety?: SafetyLevel;
  /** Only tools that have every one of these categories. */
  readonly categories?: readonly string[];
}

/** What changed in a {@link ToolRegistry}. */
export interface RegistryChange {
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

/**
 * The tools vaultd knows, by name; registering a name again replaces the tool. Tools may come and
 * go while the daemon runs (a pack's server restarts, an MCP server's list changes); listeners
 * hear of every change.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();
  readonly #listeners = new Set<(change: RegistryChange) => void>();

  /**
   * Add a tool, replacing any tool of the same name.
   * @param toolOrDefinition a tool from `defineTool`, or a definition that is declared here.
   * @returns the registered tool.
   * @throws Error when a definition breaks an invariant (see `defineTool`).
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds tools of every argument type
  register(toolOrDefinition: Tool<any> | ToolDefinition<any>): Tool {
    const tool = (
      isDefinedTool(toolOrDefinition) ? toolOrDefinition : defineTool(toolOrDefinition)
    ) as Tool;
    this.#tools.set(tool.name, tool);
    this.#emit({ added: [tool.name], removed: [] });
    return tool;
  }

  /** Remove a tool; returns whether it was registered. */
  unregister(name: string): boolean {
    const removed = this.#tools.delete(name);
    if (removed) this.#emit({ added: [], removed: [name] });
    return removed;
  }

  /**
   * Make a pack's tools exactly these, in one change: its other tools are removed.
   * @param pack the pack's name (tools are matched by their `pack`).
   * @param tools the pack's tools now; each must name the pack.
   */
  replacePack(pack: string, tools: readonly Tool[]): RegistryChange {
    const removed: string[] = [];
    const wanted = new Set(tools.map((t) => t.name));
    for (const [name, tool] of this.#tools) {
      if (tool.pack === pack && !wanted.has(name)) {
        this.#tools.delete(name);
        removed.push(name);
      }
    }
    const added: string[] = [];
    for (const tool of tools) {
      if (this.#tools.get(tool.name) !== tool) added.push(tool.name);
      this.#tools.set(tool.name, tool);
    }
    const change = { added, removed };
    if (added.length > 0 || removed.length > 0) this.#emit(change);
    return change;
  }

  /**
   * Hear of every change; returns the unsubscribe.
   * @param listener called after each change; its errors are ignored.
   */
  onChange(listener: (change: RegistryChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(change: RegistryChange): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /** The tool of that name, or undefined when none is registered. */
  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  /** Whether a tool of that name is registered. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** Names of the registered tools, sorted. */
  names(): string[] {
    return [...this.#tools.keys()].sort();
  }

  /** Number of registered tools. */
  get size(): number {
    return this.#tools.size;
  }

  /**
   * The registered tools sorted by name, optionally filtered.
   * @param filter maximum safety level and required categories; both must hold. Default: all tools.
   * @throws Error for an unknown `maxSafety`.
   */
  list(filter: ToolFilter = {}): Tool[] {
    let maxRank = SAFETY_LEVELS.length - 1;
    if (filter.maxSafety !== undefined) {
      maxRank = SAFETY_LEVELS.indexOf(filter.maxSafety);
      if (maxRank < 0) {
        throw new Error(
          `unknown safety level ${JSON.stringify(filter.maxSafety)}; expected one of: ${SAFETY_LEVELS.join(', ')}`,
        );
      }
    }
    const wanted = filter.categories ?? [];
    return this.names()
      .map((name) => this.#tools.get(name) as Tool)
      .filter(
        (tool) =>
          SAFETY_LEVELS.indexOf(tool.safety) <= maxRank &&
          wanted.every((category) => tool.categories.includes(category)),
      );
  }
}
