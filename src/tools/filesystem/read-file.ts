import type { FileHandle } from 'node:fs/promises';
import { defineTool } from '../../protocol/define-tool.ts';
import { ToolError } from '../../protocol/errors.ts';
import { toolOutput } from '../../protocol/output.ts';
import { DEFAULT_MAX_OUTPUT_BYTES } from '../../execute/output-cap.ts';
import { looksBinary, PATH_PARAM as PATH, READING_TOOL } from './common.ts';
import { readFilesystemConfig } from './config.ts';
import { checkSingleLink, fsError, inParent, openForRead } from './pinned.ts';

/** Bytes read from disk at a time. */
const CHUNK = 64 * 1024;
/** Bytes scanned past the part returned, to count the file's lines; beyond it the count is left out. */
const COUNT_SCAN_BYTES = 64 * 1024 * 1024;
/** Bytes of a file one call reads at most (to reach `start_line`, and in all): lines past them are not returned. */
const MAX_SCAN_BYTES = 256 * 1024 * 1024;

/**
 * The tool's output cap: the executor's default and room for the line saying where to go on, so
 * the default `max_read_bytes` (as large as that default) is returned whole with it.
 */
const READ_OUTPUT_BYTES = DEFAULT_MAX_OUTPUT_BYTES + 8 * 1024;

type ReadArgs = {
  path: string;
  start_line?: number;
  end_line?: number;
  tail?: number;
};

/** `read_file`: a text file, whole or some of its lines, size-capped; binary files refused. */
export const readFile = defineTool<ReadArgs>({
  name: 'read_file',
  description:
    'Read a text file of the vault (or a configured root). Optional start_line/end_line (1-based, inclusive) or tail (the last N lines). Output is capped (max_read_bytes, 256 KiB by default): a cut result says so and gives the line to go on from. Binary files are refused.',
  parameters: {
    path: PATH,
    start_line: { type: 'integer', minimum: 1, description: 'first line to return (1-based)' },
    end_line: { type: 'integer', minimum: 1, description: 'last line to return (inclusive)' },
    tail: { type: 'integer', minimum: 1, description: 'return the last N lines instead' },
  },
  required: ['path'],
  ...READING_TOOL,
  maxOutputBytes: READ_OUTPUT_BYTES,
  async handler(args, ctx) {
    if (args.tail !== undefined && (args.start_line !== undefined || args.end_line !== undefined)) {
      throw new ToolError('INVALID_PARAMS', 'give tail, or start_line/end_line, not both');
    }
    if (
      args.start_line !== undefined &&
      args.end_line !== undefined &&
      args.end_line < args.start_line
    ) {
      throw new ToolError(
        'INVALID_PARAMS',
        `end_line ${args.end_line} is before start_line ${args.start_line}`,
      );
    }
    const config = readFilesystemConfig(ctx.config);
    const resolved = await ctx.files.resolve(args.path, 'read');
    const shown = ctx.files.display(resolved);
    const cap = textCap(config.maxReadBytes, ctx.config, shown);
    return inParent(resolved.path, async (dir, name) => {
      const handle = await openForRead(dir, name, shown);
      try {
        const stat = await handle.stat();
        if (stat.isDirectory()) {
          throw new ToolError('EXECUTION_FAILED', `${shown} is a folder; use list_directory`);
        }
        if (!stat.isFile())
          throw new ToolError('EXECUTION_FAILED', `${shown} is not a regular file`);
        checkSingleLink(stat.nlink, shown);
        const head = Buffer.alloc(Math.min(stat.size, 8192));
        await handle.read(head, 0, head.length, 0);
        if (looksBinary(head, stat.size <= head.length)) {
          throw new ToolError(
            'EXECUTION_FAILED',
            `${shown} is a binary file (or not UTF-8 text); read_file reads text only (file_info tells its size and type)`,
          );
        }
        const part =
          args.tail === undefined
            ? await readLines(
                handle,
                stat.size,
                args.start_line ?? 1,
                args.end_line,
                cap,
                ctx.signal,
              )
            : await readTail(handle, stat.size, args.tail, cap);
        const data = {
          path: shown,
          size: stat.size,
          modified: stat.mtime.toISOString(),
          start_line: part.startLine,
          end_line: part.endLine,
          total_lines: part.totalLines,
          truncated: part.truncated,
          ...(part.truncated && part.endLine !== null ? { next_start_line: part.endLine + 1 } : {}),
        };
        const start = args.start_line ?? 1;
        // An empty answer must not read as an empty file.
        const past =
          part.endLine === null && part.totalLines !== null && start > Math.max(1, part.totalLines);
        const note = past
          ? `[… ${shown} has ${part.totalLines} line${part.totalLines === 1 ? '' : 's'}: start_line ${start} is past its end]`
          : !part.truncated
            ? ''
            : args.tail !== undefined
              ? `\n[… only these lines fit in ${cap} bytes]`
              : part.unreached
                ? `\n[… line ${part.startLine ?? 1} is not within the first ${MAX_SCAN_BYTES / (1024 * 1024)} MiB of ${shown}, as far as read_file reads; tail reads the end]`
                : part.endLine === null
                  ? `\n[… line ${part.startLine ?? 1} alone is longer than ${cap} bytes; read_file cannot return it]`
                  : `\n[… cut at ${cap} bytes: ${shown} goes on; read on with start_line: ${part.endLine + 1}]`;
        return toolOutput(part.text + note, data);
      } catch (error) {
        throw fsError(error, shown);
      } finally {
        await handle.close();
      }
    });
  },
});

/**
 * Bytes of text a call returns: `max_read_bytes`, but never so much that the text and the line
 * saying where to go on pass the tool's output cap (`limits.read_file.max_output_bytes`, else
 * {@link READ_OUTPUT_BYTES}). When that cap was the executor's default, it cut the last line off, and the agent
 * read "read on with start_line:" without the line; with a larger `max_read_bytes` it cut the text
 * and `next_start_line` skipped what was cut.
 * @param maxReadBytes the pack's `max_read_bytes`.
 * @param section the pack's config section (its `limits`).
 * @param shown the path as the marker names it.
 */
function textCap(
  maxReadBytes: number,
  section: Readonly<Record<string, unknown>>,
  shown: string,
): number {
  const limits = section['limits'] as
    Record<string, Record<string, unknown> | undefined> | undefined;
  const own = limits?.['read_file']?.['max_output_bytes'];
  const output = typeof own === 'number' ? own : READ_OUTPUT_BYTES;
  // The longest marker: its words, two numbers and the path.
  const room = 160 + Buffer.byteLength(shown);
  return Math.max(1, Math.min(maxReadBytes, output - room));
}

interface Part {
  readonly text: string;
  /** First line returned, when known (a tail of a file not read to its start has no numbers). */
  readonly startLine: number | null;
  /** Last line returned, or null when none was. */
  readonly endLine: number | null;
  /** Lines of the whole file, when it was scanned to its end. */
  readonly totalLines: number | null;
  /** The byte cap stopped the part before the lines asked for. */
  readonly truncated: boolean;
  /** The first line asked for starts past the bytes a call reads ({@link MAX_SCAN_BYTES}). */
  readonly unreached: boolean;
}

/**
 * Lines `first..last` of a file, read in chunks, within `cap` bytes of text returned. Only the
 * bytes of lines that are returned are kept (as chunks, decoded once the line is whole): a line
 * past the cap or outside the range is only scanned for its end, so a file of one huge line costs
 * no more memory than the cap and time linear in the bytes read. At most {@link COUNT_SCAN_BYTES}
 * are read past the part returned and {@link MAX_SCAN_BYTES} in all; the call's signal is looked at
 * before every chunk.
 */
async function readLines(
  handle: FileHandle,
  size: number,
  first: number,
  last: number | undefined,
  cap: number,
  signal: AbortSignal,
): Promise<Part> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const buffer = Buffer.alloc(CHUNK);
  const kept: string[] = [];
  let keptBytes = 0;
  let line = 1; // the line the next byte belongs to
  let pieces: Buffer[] = []; // the bytes of that line so far, while it is one to return
  let pieceBytes = 0;
  let open = false; // bytes of that line were read, and not its end
  let truncated = false;
  let unreached = false;
  let position = 0;
  let scannedPast = 0;
  const wanted = (): boolean => !truncated && line >= first && (last === undefined || line <= last);
  const decode = (bytes: Buffer): string => {
    try {
      return decoder.decode(bytes);
    } catch {
      throw new ToolError(
        'EXECUTION_FAILED',
        'the file is not UTF-8 text past its start; read_file reads text only',
      );
    }
  };
  while (position < size) {
    if (signal.aborted) {
      throw new ToolError(
        'EXECUTION_FAILED',
        `the call was stopped (its timeout, or the daemon stopping) after ${position} bytes of the file were read`,
      );
    }
    if (position >= MAX_SCAN_BYTES) {
      // Lines still wanted past the bound are not returned: the part ends here.
      if (line < first) unreached = true;
      if (wanted() || unreached) truncated = true;
      break;
    }
    const { bytesRead } = await handle.read(buffer, 0, CHUNK, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    const chunk = buffer.subarray(0, bytesRead);
    for (let from = 0; ;) {
      const newline = chunk.indexOf(0x0a, from);
      const end = newline === -1 ? bytesRead : newline;
      if (wanted()) {
        if (keptBytes + pieceBytes + (end - from) + 1 > cap) {
          truncated = true;
          pieces = [];
          pieceBytes = 0;
        } else if (end > from) {
          // A copy: the buffer is read into again.
          pieces.push(Buffer.from(chunk.subarray(from, end)));
          pieceBytes += end - from;
        }
      }
      if (newline === -1) {
        open ||= end > from;
        break;
      }
      if (wanted()) {
        kept.push(decode(Buffer.concat(pieces, pieceBytes)));
        keptBytes += pieceBytes + 1;
      }
      pieces = [];
      pieceBytes = 0;
      open = false;
      line++;
      from = newline + 1;
    }
    if (truncated || (last !== undefined && line > last)) {
      scannedPast += bytesRead;
      if (scannedPast > COUNT_SCAN_BYTES) break;
    }
  }
  const atEnd = position >= size;
  if (atEnd && open && wanted()) {
    kept.push(decode(Buffer.concat(pieces, pieceBytes)));
    keptBytes += pieceBytes + 1;
  }
  const lastLine = atEnd ? (open ? line : line - 1) : null;
  const endLine = kept.length === 0 ? null : first + kept.length - 1;
  // Through to the end of a file that ends with a line end: keep it, so the text is the file's.
  const trailing = atEnd && !open && size > 0 && endLine !== null && endLine === lastLine;
  return {
    text: kept.join('\n') + (trailing ? '\n' : ''),
    startLine: first,
    endLine,
    totalLines: lastLine,
    truncated,
    unreached,
  };
}

/** The last `count` lines of a file, read backwards in chunks, within `cap` bytes. */
async function readTail(
  handle: FileHandle,
  size: number,
  count: number,
  cap: number,
): Promise<Part> {
  let position = size;
  let chunks: Buffer[] = [];
  let bytes = 0;
  let newlines = 0;
  while (position > 0 && bytes < cap + 1) {
    const length = Math.min(CHUNK, position, cap + 1 - bytes);
    position -= length;
    const chunk = Buffer.alloc(length);
    await handle.read(chunk, 0, length, position);
    chunks = [chunk, ...chunks];
    bytes += length;
    for (const b of chunk) if (b === 0x0a) newlines++;
    if (newlines > count + 1) break;
  }
  let text = Buffer.concat(chunks).toString('utf8');
  const fromStart = position === 0;
  if (text.endsWith('\n')) text = text.slice(0, -1);
  let lines = text.split('\n');
  // A first line cut by the window is not a whole line.
  if (!fromStart) lines = lines.slice(1);
  const truncated = lines.length < count && !fromStart;
  lines = lines.slice(-count);
  // Keep within the cap, dropping whole lines from the front.
  let total = lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
  while (total > cap && lines.length > 0) total -= Buffer.byteLength(lines.shift() ?? '') + 1;
  const totalLines = fromStart ? (text === '' ? 0 : text.split('\n').length) : null;
  return {
    text: lines.join('\n'),
    startLine: totalLines === null || lines.length === 0 ? null : totalLines - lines.length + 1,
    endLine: totalLines === null || lines.length === 0 ? null : totalLines,
    totalLines,
    truncated,
    unreached: false,
  };
}
