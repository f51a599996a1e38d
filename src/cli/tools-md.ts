import type { Tool } from '../protocol/types.ts';

const FENCE = '```';

/**
 * Render `TOOLS.md`: how an agent writes a call, and every registered tool with its parameters.
 * @param tools the registered tools.
 */
export function renderToolsMarkdown(tools: readonly Tool[]): string {
  const lines: string[] = [
    '# Tools for agents',
    '',
    'Write a note into `Needs_Action/` with one fenced `json` block per call. vaultd runs the calls,',
    'appends the results under `## Tool Results`, and moves the note to `Done/`, `Failed/` or',
    '`Pending_Approval/` (dangerous tools wait for a human).',
    '',
    `${FENCE}\`markdown`,
    `${FENCE}json`,
    '{"tool_call": {"name": "search_web", "parameters": {"query": "AI agent frameworks", "num_results": 3}}}',
    FENCE,
    `${FENCE}\``,
    '',
    'Write the note in one go (write a temp file, then rename it into the folder); a note whose',
    'JSON is broken or whose fence is not closed waits a moment, then gets an error result.',
    'Give a call an `"id"` of your own to find its result easily; without one, vaultd derives one.',
    '',
  ];
  for (const tool of tools) {
    lines.push(
      `## ${tool.name}`,
      '',
      `Safety: **${tool.safety}**${tool.safety === 'dangerous' ? ' (waits for a human)' : ''}.`,
      '',
      tool.description.trim(),
      '',
    );
    lines.push(
      '| parameter | type | required | default | description |',
      '| --- | --- | --- | --- | --- |',
    );
    for (const [name, schema] of Object.entries(tool.parameters)) {
      const type = Array.isArray(schema['enum'])
        ? (schema['enum'] as unknown[]).map((v) => `\`${String(v)}\``).join(' \\| ')
        : String(schema['type'] ?? 'any');
      const fallback =
        schema['default'] === undefined
          ? ''
          : `\`${JSON.stringify(schema['default']).replace(/\|/g, '\\|')}\``;
      const description = String(schema['description'] ?? '')
        .replace(/\|/g, '\\|')
        .replace(/\n/g, ' ');
      lines.push(
        `| \`${name}\` | ${type} | ${tool.required.includes(name) ? 'yes' : 'no'} | ${fallback} | ${description} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}
