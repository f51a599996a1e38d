import { CONFIG_DEFAULTS } from '../config/defaults.ts';
import type { Config } from '../config/types.ts';
import { MAX_NESTING } from '../protocol/depth.ts';
import type { Tool } from '../protocol/types.ts';
import { longestBacktickRun } from '../note/escape.ts';

const FENCE = '```';
// Control characters other than tab and the line breaks, dropped from a tool's own text.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/** What TOOLS.md tells agents about their vault: its folder names and note limits. */
export type ToolsMdConfig = Pick<Config, 'folders' | 'max_note_bytes' | 'max_calls_per_note'>;

/**
 * Render `TOOLS.md`: how an agent writes a call, the limits on a note, and every registered tool
 * with its parameters.
 * @param tools the registered tools.
 * @param config the vault's config (the defaults when not given).
 */
export function renderToolsMarkdown(
  tools: readonly Tool[],
  config: ToolsMdConfig = CONFIG_DEFAULTS,
): string {
  const { inbox, done, failed, pending } = config.folders;
  const lines: string[] = [
    '# Tools for agents',
    '',
    `Write a note into \`${inbox}/\` with one fenced \`json\` block per call. vaultd runs the calls,`,
    `appends the results under \`## Tool Results\`, and moves the note to \`${done}/\`, \`${failed}/\` or`,
    `\`${pending}/\` (dangerous tools wait for a human). Only \`.md\` files directly in \`${inbox}/\` are`,
    'read: a note in a sub-folder of it, or with another extension, gets no answer.',
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
    `Limits: a note of more than ${config.max_note_bytes} bytes, or with more than`,
    `${config.max_calls_per_note} calls waiting for a result, gets a \`NOTE_TOO_LARGE\` error and runs`,
    `nothing; split the calls over several notes. Parameters nested more than ${MAX_NESTING} levels deep`,
    'make the call `INVALID_CALL`: pass such data as a string or a file.',
    '',
  ];
  for (const tool of tools) {
    lines.push(
      `## ${tool.name}`,
      '',
      `Safety: **${tool.safety}**${tool.safety === 'dangerous' ? ' (waits for a human)' : ''}${
        // A tool whose calls differ (write_file in a scratch folder, edit_file's dry run).
        typeof tool.effects === 'function' && tool.safety !== 'safe'
          ? ' at most: the level of a call depends on its parameters'
          : ''
      }.`,
      '',
      ...quoteDescription(tool.description),
      '',
    );
    lines.push(
      '| parameter | type | required | default | description |',
      '| --- | --- | --- | --- | --- |',
    );
    for (const [name, schema] of Object.entries(tool.parameters)) {
      const type = Array.isArray(schema['enum'])
        ? (schema['enum'] as unknown[]).map((v) => codeCell(String(v))).join(' \\| ')
        : cell(typeLabel(schema));
      const fallback =
        schema['default'] === undefined ? '' : codeCell(JSON.stringify(schema['default']));
      const description = cell(String(schema['description'] ?? ''));
      lines.push(
        `| ${codeCell(name)} | ${type} | ${tool.required.includes(name) ? 'yes' : 'no'} | ${fallback} | ${description} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}

/**
 * A tool's description, quoted: it is the tool's own text (a plugin's, a pack's), so
 * whatever it holds (a heading, a `Safety:` line, a fence, a table, HTML) stays inside the quote
 * and cannot pass for another tool's section or change this one's safety line. Obsidian's `%%`
 * comments and `$$` math do not end with a quote, so their markers are escaped.
 */
function quoteDescription(text: string): string[] {
  return text
    .replace(CONTROL, '')
    .trim()
    .split(/\r\n|\r|\n/)
    .map((line) => (line === '' ? '>' : `> ${obsidianInert(line)}`));
}

/**
 * A parameter's type as an agent needs it to write the value: the items of a list and the fields
 * of an object (`array of {old_text: string, new_text: string}`), two levels down; a bare
 * `array` left the agent to guess what goes in it.
 * @param schema the parameter's JSON Schema.
 * @param depth levels already described.
 */
function typeLabel(schema: Readonly<Record<string, unknown>>, depth = 0): string {
  if (Array.isArray(schema['enum'])) {
    return (schema['enum'] as unknown[]).map((v) => JSON.stringify(v)).join(' or ');
  }
  const type = schema['type'];
  const label = Array.isArray(type) ? type.map(String).join(' or ') : String(type ?? 'any');
  if (depth >= 2) return label;
  const items = schema['items'];
  if (type === 'array' && isSchema(items)) return `array of ${typeLabel(items, depth + 1)}`;
  const properties = schema['properties'];
  if (type === 'object' && isSchema(properties) && Object.keys(properties).length > 0) {
    const fields = Object.entries(properties).map(
      ([name, field]) => `${name}: ${isSchema(field) ? typeLabel(field, depth + 1) : 'any'}`,
    );
    return `{${fields.join(', ')}}`;
  }
  return label;
}

function isSchema(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One line of a tool's own text as a table cell: no line break, no cell separator. */
function cell(text: string): string {
  return obsidianInert(oneCellLine(text));
}

/** A tool's own text as code in a table cell, in a backtick run longer than any inside it. */
function codeCell(text: string): string {
  const flat = oneCellLine(text);
  const ticks = '`'.repeat(longestBacktickRun(flat) + 1);
  const pad = flat.startsWith('`') || flat.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${flat}${pad}${ticks}`;
}

/** Text on one line with no control character and every `|` escaped (GFM, also in code). */
function oneCellLine(text: string): string {
  return text
    .replace(CONTROL, '')
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .replace(/\|/g, '\\|');
}

/** Obsidian's `%%` comment and `$$` math markers escaped: neither ends with a quote or a cell. */
function obsidianInert(text: string): string {
  return text.replace(/%%/g, '\\%\\%').replace(/\$\$/g, '\\$\\$');
}
