import { defineTool, isDefinedTool } from './define-tool.ts';
import { SAFETY_LEVELS, type SafetyLevel, type Tool, type ToolDefinition } from './types.ts';

/** Which tools {@link ToolRegistry.list} returns; both filters must hold. */
export interface ToolFilter {
  /** Only tools at most this dangerous (`safe` < `cautious` < `dangerous`). */
  readonly maxSafety?: SafetyLevel;
  /** Only tools that have every one of these categories. */
  readonly categories?: readonly string[];
}

/** The tools vaultd knows, by name; registering a name again replaces the tool. */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();

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
    return tool;
  }

  /** Remove a tool; returns whether it was registered. */
  unregister(name: string): boolean {
    return this.#tools.delete(name);
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
