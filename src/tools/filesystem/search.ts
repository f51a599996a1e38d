import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { toolOutput } from '../../protocol/output.ts';
import { readUpTo } from '../../vault/read-regular.ts';
import { looksBinary, READING_TOOL } from './common.ts';
import { readFilesystemConfig } from './config.ts';
import { lstatOrNull, swappedIn } from './pinned.ts';
import { compilePathGlob } from './path-glob.ts';
import { regexMatcher, type LineMatch, type RegexMatcher } from './regex-worker.ts';
import { walk } from './walk.ts';

type SearchArgs = {
  pattern: string;
  path?: string;
  content?: string;
  regex?: boolean;
  case_sensitive?: boolean;
  max_results?: number;
};

/** One hit: a file (name search) or a line of a file (content search). */
interface Hit {
  path: string;
  type?: string;
  size?: number;
  line?: number;
  text?: string;
}

/** `search_files`: files by name (glob) and, optionally, lines by content, bounded. */
export const searchFiles = defineTool<SearchArgs>({
  name: 'search_files',
  description:
    'Find files under a folder (default the vault) whose name matches a glob (`*.md`, or with a slash a path: `Projects/**/*.md`; `{a,b}` alternatives). With content, return the lines of those files containing the text (or matching the regular expression with regex: true), with line numbers. Case-insensitive unless case_sensitive: true. Symbolic links are never followed; depth, count and time are bounded, and a cut result says so.',
  parameters: {
    pattern: { type: 'string', minLength: 1, maxLength: 500 },
    path: { type: 'string', minLength: 1, maxLength: 4096, default: '.' },
    content: { type: 'string', minLength: 1, maxLength: 1000 },
    regex: { type: 'boolean', default: false },
    case_sensitive: { type: 'boolean', default: false },
    max_results: { type: 'integer', minimum: 1, maximum: 10_000, default: 100 },
  },
  required: ['pattern'],
  ...READING_TOOL,
  async handler(args, ctx) {
    const config = readFilesystemConfig(ctx.config);
    const ignoreCase = args.case_sensitive !== true;
    const matchesName = compilePathGlob(args.pattern, ignoreCase);
    const base = await ctx.files.resolve(args.path ?? '.', 'read');
    const shown = ctx.files.display(base);
    const stat = await lstatOrNull(base.path);
    if (stat?.isSymbolicLink() === true) throw swappedIn(shown);
    if (stat?.isDirectory() !== true) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `${shown} is not a folder; give the folder to search in`,
      );
    }
    const max = Math.min(args.max_results ?? 100, config.maxResults);
    const deadline = Date.now() + config.searchTimeoutMs;
    let matcher: RegexMatcher | undefined;
    if (args.content !== undefined && args.regex === true) {
      try {
        new RegExp(args.content, ignoreCase ? 'i' : '');
      } catch (error) {
        throw new ToolError(
          'INVALID_PARAMS',
          `content is not a valid regular expression: ${(error as Error).message}`,
        );
      }
      matcher = regexMatcher(args.content, ignoreCase ? 'i' : '');
    }
    const needle =
      args.content === undefined
        ? undefined
        : ignoreCase
          ? args.content.toLowerCase()
          : args.content;
    const hits: Hit[] = [];
    let skipped = 0;
    let timedOut = false;
    const prefix = (relative: string): string =>
      shown === '.' ? relative : `${shown}/${relative}`;
    let cut;
    try {
      cut = await walk(
        ctx.files,
        base.path,
        {
          maxDepth: config.maxDepth,
          maxVisited: config.maxVisited,
          deadline,
          signal: ctx.signal,
          mode: 'read',
        },
        async (entry) => {
          if (hits.length >= max) return false;
          if (!matchesName(entry.relative)) return true;
          if (args.content === undefined) {
            const s = await lstatOrNull(entry.at);
            hits.push({
              path: prefix(entry.relative),
              type: entry.type,
              ...(s === null || entry.type === 'directory' ? {} : { size: s.size }),
            });
            return true;
          }
          if (entry.type !== 'file') return true;
          const text = await readForSearch(entry.at, config.maxEditBytes);
          if (text === null) {
            skipped++;
            return true;
          }
          let lines: LineMatch[] | null;
          if (matcher !== undefined) {
            lines = await matcher.match(text, max - hits.length, deadline);
            if (lines === null) {
              timedOut = true;
              return false;
            }
          } else {
            lines = literalMatches(text, needle ?? '', ignoreCase, max - hits.length);
          }
          for (const l of lines)
            hits.push({ path: prefix(entry.relative), line: l.line, text: l.text });
          return true;
        },
      );
    } finally {
      await matcher?.close();
    }
    const full = hits.length >= max;
    const reason = full
      ? max < config.maxResults
        ? `stopped at max_results ${max}`
        : `stopped at ${max} results, the most a search returns here (tools.filesystem.max_results): narrow the pattern, the content or the folder`
      : timedOut || cut === 'time'
        ? `stopped after ${config.searchTimeoutMs} ms`
        : cut === 'count'
          ? `stopped after looking at ${config.maxVisited} entries`
          : cut === 'depth'
            ? `folders deeper than ${config.maxDepth} levels not searched`
            : null;
    const lines = hits.map((h) =>
      h.line === undefined
        ? `${h.path}${h.type === 'directory' ? '/' : ''}`
        : `${h.path}:${h.line}: ${h.text ?? ''}`,
    );
    const head = `${hits.length} ${args.content === undefined ? 'files' : 'matching lines'} under ${shown}${reason === null ? '' : ` (cut: ${reason})`}${skipped > 0 ? ` · ${skipped} binary or too large files skipped` : ''}`;
    return toolOutput([head, ...lines].join('\n'), {
      path: shown,
      pattern: args.pattern,
      ...(args.content === undefined ? {} : { content: args.content }),
      matches: hits,
      truncated: reason !== null,
      ...(reason === null ? {} : { truncated_reason: reason }),
      skipped_files: skipped,
    });
  },
});

function literalMatches(
  text: string,
  needle: string,
  ignoreCase: boolean,
  max: number,
): LineMatch[] {
  const out: LineMatch[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length && out.length < max; i++) {
    const line = lines[i] ?? '';
    if ((ignoreCase ? line.toLowerCase() : line).includes(needle)) {
      out.push({ line: i + 1, text: line.slice(0, 300) });
    }
  }
  return out;
}

/**
 * A file's text for searching, or null when it is binary, too large, gone or a link by now.
 * @param at the file named through its pinned folder.
 * @param maxBytes the size cap.
 */
async function readForSearch(at: string, maxBytes: number): Promise<string | null> {
  let handle;
  try {
    // O_NONBLOCK: a fifo swapped in after the listing must not hold a thread of the pool.
    handle = await open(at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || stat.nlink > 1 || stat.size > maxBytes) return null;
    // Never past the cap, even when the file grows while it is read.
    const bytes = await readUpTo(handle, maxBytes, stat.size);
    return bytes === null || looksBinary(bytes, true) ? null : bytes.toString('utf8');
  } catch {
    return null;
  } finally {
    await handle.close();
  }
}
