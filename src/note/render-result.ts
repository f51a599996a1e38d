import type { ToolResult } from '../protocol/types.ts';
import {
  escapeMarkdownLine,
  escapeMarkdownText,
  escapeMarkdownTitle,
  longestBacktickRun,
  quoteLines,
  safeLinkUrl,
} from './escape.ts';

/** Search hits shown in a callout at most. */
const MAX_HITS = 20;
/** File places shown in a callout at most. */
const MAX_PLACES = 30;
// A vault-relative path that is safe as a wiki-link target: no `[ ] | # ^ %`, backticks, line
// breaks or markup characters, no absolute path, no `..` segment.
const LINKABLE_PATH = /^(?!\/)(?!.*(?:^|\/)\.\.(?:\/|$))[\p{L}\p{N} ._\-/()+,@~'&]+$/u;

const CALLOUT: Record<string, string> = { success: 'success', error: 'failure' };

/**
 * Renders one result as markdown: a callout a person reads in Obsidian (outcome, links for search
 * hits, wiki links for places in files (`data.places`), error code and message, or the content
 * truncated), then a fenced `json` block holding
 * `{"tool_result": result}`. Everything tool-controlled is escaped so nothing rendered can open a
 * fence, a heading or a link to a non-http URL, and the fence is longer than any backtick run in
 * the JSON. Lines end with `\n`; there is no trailing line ending.
 * @param result The result to render.
 */
export function renderResult(result: ToolResult): string {
  const kind = CALLOUT[result.status] ?? 'warning';
  const title = [result.name, result.id, result.status].map((t) =>
    escapeMarkdownTitle(String(t), 100),
  );
  const lines = [`[!${kind}] ${title.join(' · ')}`, ...renderBody(result)];
  const facts = renderFacts(result);
  if (facts !== '') lines.push('', facts);
  const json = stringifyResult(result);
  const longest = longestBacktickRun(json);
  const fence = '`'.repeat(Math.max(4, longest + 1));
  return [...quoteLines(lines), '', `${fence}json`, json, fence].join('\n');
}

function renderBody(result: ToolResult): string[] {
  if (result.error !== null && result.status !== 'success') {
    const code = escapeMarkdownTitle(String(result.error.code), 60);
    const [first = '', ...rest] = escapeMarkdownText(String(result.error.message));
    return [`**${code}**: ${first}`, ...rest];
  }
  const hits = readHits(result.data);
  if (hits !== null) {
    if (hits.length === 0) return ['No results.'];
    const items = hits.slice(0, MAX_HITS).flatMap((hit, i) => renderHit(hit, i + 1));
    if (hits.length > MAX_HITS)
      items.push(`*(${hits.length - MAX_HITS} more in the JSON block below)*`);
    return items;
  }
  const content = typeof result.content === 'string' ? result.content : '';
  const places = readPlaces(result.data);
  const body =
    places !== null
      ? renderPlaces(content, places)
      : content.trim() === ''
        ? ['(no content)']
        : escapeMarkdownText(content);
  const diff = readDiff(result.data);
  return diff === null ? body : [...body, '', ...renderDiff(diff)];
}

/** Lines of a diff shown in a callout at most; the JSON block below holds all of it. */
const MAX_DIFF_LINES = 200;

function readDiff(data: unknown): string | null {
  if (typeof data !== 'object' || data === null) return null;
  const diff = (data as { diff?: unknown }).diff;
  return typeof diff === 'string' && diff.trim() !== '' ? diff : null;
}

/**
 * A unified diff as a fenced `diff` block Obsidian colours: code is never read as markdown, the
 * fence is longer than any backtick run in it, and control characters are shown escaped.
 */
function renderDiff(diff: string): string[] {
  const all = diff.replace(/\r\n?/g, '\n').replace(/\n$/, '').split('\n');
  const lines = all.slice(0, MAX_DIFF_LINES).map((line) =>
    line.replace(
      // eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
      /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    ),
  );
  let longest = 0;
  for (const line of lines) longest = Math.max(longest, longestBacktickRun(line));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const more =
    all.length > MAX_DIFF_LINES
      ? [`*(${all.length - MAX_DIFF_LINES} more lines in the JSON block below)*`]
      : [];
  return [`${fence}diff`, ...lines, fence, ...more];
}

interface PlaceItem {
  readonly path: string;
  readonly line: number;
  readonly column: number | undefined;
  readonly label: string;
  readonly text: string;
}

/** `data.places`: places in files a tool found (diagnostics, definitions, symbols). */
function readPlaces(data: unknown): PlaceItem[] | null {
  if (typeof data !== 'object' || data === null) return null;
  const places = (data as { places?: unknown }).places;
  if (!Array.isArray(places)) return null;
  const out: PlaceItem[] = [];
  for (const item of places) {
    if (typeof item !== 'object' || item === null) return null;
    const { path, line, column, label, text } = item as Record<string, unknown>;
    if (typeof path !== 'string' || typeof line !== 'number') return null;
    out.push({
      path,
      line,
      column: typeof column === 'number' ? column : undefined,
      label: typeof label === 'string' ? label : '',
      text: typeof text === 'string' ? text : '',
    });
  }
  return out;
}

/**
 * The content's first line, then each place as a wiki link to its file (vault-relative paths
 * only; any other path is shown as text) with `path:line:column` as the link's text, its label,
 * and its source line below it.
 */
function renderPlaces(content: string, places: readonly PlaceItem[]): string[] {
  const first = content.split(/\r\n|\r|\n/, 1)[0] ?? '';
  const out = first.trim() === '' ? [] : [escapeMarkdownTitle(first, 300)];
  for (const place of places.slice(0, MAX_PLACES)) {
    const where = `${place.path}:${place.line}${place.column === undefined ? '' : `:${place.column}`}`;
    const link = LINKABLE_PATH.test(place.path)
      ? `[[${place.path}|${where}]]`
      : escapeMarkdownTitle(where, 300);
    const label = place.label === '' ? '' : ` ${escapeMarkdownTitle(place.label, 300)}`;
    out.push(`- ${link}${label}`);
    if (place.text !== '') out.push(`  ${escapeMarkdownTitle(place.text, 200)}`);
  }
  if (places.length > MAX_PLACES) {
    out.push(`*(${places.length - MAX_PLACES} more in the JSON block below)*`);
  }
  return out.length === 0 ? ['(no content)'] : out;
}

interface Hit {
  readonly title: string;
  readonly url: string;
  readonly snippet: string;
}

function readHits(data: unknown): Hit[] | null {
  if (typeof data !== 'object' || data === null) return null;
  const results = (data as { results?: unknown }).results;
  if (!Array.isArray(results)) return null;
  const hits: Hit[] = [];
  for (const item of results) {
    if (typeof item !== 'object' || item === null) return null;
    const { title, url, snippet } = item as Record<string, unknown>;
    if (typeof url !== 'string') return null;
    hits.push({
      title: typeof title === 'string' && title.trim() !== '' ? title : url,
      url,
      snippet: typeof snippet === 'string' ? snippet : '',
    });
  }
  return hits;
}

function renderHit(hit: Hit, n: number): string[] {
  const title = escapeMarkdownTitle(hit.title);
  const href = safeLinkUrl(hit.url);
  const head =
    href === null
      ? `${n}. ${title} (${escapeMarkdownTitle(hit.url)})`
      : `${n}. [${title}](${href})`;
  const snippet = escapeMarkdownTitle(hit.snippet, 300);
  return snippet === '' ? [head] : [head, `   ${snippet}`];
}

function renderFacts(result: ToolResult): string {
  const m = result.metadata as Partial<ToolResult['metadata']> | undefined;
  if (m === undefined || m === null) return '';
  const facts: string[] = [];
  if (typeof m.execution_time_ms === 'number') facts.push(`${Math.round(m.execution_time_ms)} ms`);
  if (typeof m.safety_level === 'string') facts.push(m.safety_level);
  if (typeof m.approved_by === 'string') facts.push(`approved by ${m.approved_by}`);
  if (typeof m.attempts === 'number' && m.attempts > 1) facts.push(`${m.attempts} attempts`);
  if (m.cached === true) facts.push('cached');
  return facts.length === 0 ? '' : `*${escapeMarkdownLine(facts.join(' · '))}*`;
}

function stringifyResult(result: ToolResult): string {
  try {
    return JSON.stringify({ tool_result: result }, null, 2);
  } catch {
    // Data that JSON cannot hold (a BigInt, a cycle) is dropped rather than failing the write-back.
    const { id, name, success, status, content, error } = result;
    const safe = { id, name, success, status, content: String(content), error, data: null };
    return JSON.stringify({ tool_result: safe }, null, 2);
  }
}
