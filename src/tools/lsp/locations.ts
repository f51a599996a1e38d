import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { ResolvedPath, VaultAccess } from '../../protocol/types.ts';
import { LINKED, readRegularFile } from '../../vault/read-regular.ts';
import { splitLines, toHumanPosition, type LspPosition } from './positions.ts';

/** Largest file the pack opens or quotes from. */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Characters of a source line shown beside a location. */
const MAX_LINE_CHARS = 300;

/** An LSP range. */
export interface LspRange {
  readonly start: LspPosition;
  readonly end: LspPosition;
}

/** A place in a file as results show it: 1-based line and column in characters. */
export interface Place {
  /** The path as agents give it back (vault-relative in the vault). */
  readonly path: string;
  readonly line: number;
  readonly column: number;
  readonly end_line: number;
  readonly end_column: number;
  /** The source line the place starts on, trimmed. */
  readonly text: string;
}

/**
 * Turns the locations servers send into places inside the pack's roots, reading each file once
 * per call; a location outside the roots (the TypeScript library, a file a project's config points
 * at elsewhere), or in a file with other hard links (one may be outside the roots), is counted,
 * never read or shown.
 */
export class PlaceFinder {
  readonly #files: VaultAccess;
  readonly #lines = new Map<string, Promise<string[] | undefined>>();
  /** What each URI a server named was found to be, for this call. */
  readonly #verdicts = new Map<string, Promise<ResolvedPath | undefined>>();
  /** Locations left out because they are outside the roots (or not files). */
  outside = 0;

  /** @param files the call's file access. */
  constructor(files: VaultAccess) {
    this.#files = files;
  }

  /**
   * Remember a file's lines already read (the file a call opened).
   * @param path absolute real path.
   * @param lines its lines.
   */
  know(path: string, lines: string[]): void {
    this.#lines.set(path, Promise.resolve(lines));
  }

  /**
   * The place of a server's location, or undefined when it is outside the roots.
   * @param uri the location's URI (only `file:` URIs are followed).
   * @param range its range.
   */
  async place(uri: unknown, range: LspRange | undefined): Promise<Place | undefined> {
    const resolved = await this.resolve(uri);
    if (resolved === undefined) return undefined;
    const lines = await this.linesOf(resolved.path);
    const start = range?.start ?? { line: 0, character: 0 };
    const end = range?.end ?? start;
    const from = lines === undefined ? human(start) : toHumanPosition(lines, start);
    const to = lines === undefined ? human(end) : toHumanPosition(lines, end);
    const text = (lines?.[start.line] ?? '').trim();
    return {
      path: this.#files.display(resolved),
      line: from.line,
      column: from.column,
      end_line: to.line,
      end_column: to.column,
      text: text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}…` : text,
    };
  }

  /**
   * A server's URI as a path inside the roots, or undefined (counted) when it is not one.
   * @param uri the URI.
   */
  async resolve(uri: unknown): Promise<ResolvedPath | undefined> {
    // Decided once per URI in a call: a list of references names the same few files again and
    // again.
    const key = typeof uri === 'string' ? uri : '';
    let verdict = this.#verdicts.get(key);
    if (verdict === undefined) {
      verdict = this.#resolveOnce(uri);
      this.#verdicts.set(key, verdict);
    }
    const resolved = await verdict;
    if (resolved === undefined) this.outside += 1;
    return resolved;
  }

  async #resolveOnce(uri: unknown): Promise<ResolvedPath | undefined> {
    let path: string;
    try {
      if (typeof uri !== 'string' || !uri.startsWith('file:')) throw new Error('not a file');
      path = fileURLToPath(uri);
    } catch {
      return undefined;
    }
    try {
      const resolved = await this.#files.resolve(path, 'read');
      if (resolved.exists && (await stat(resolved.path)).nlink <= 1) return resolved;
    } catch {
      // Outside the roots, or in vaultd's state: counted by the caller.
    }
    return undefined;
  }

  /**
   * A file's lines, read once per call; undefined when it cannot be read or is too large.
   * @param path absolute real path inside the roots.
   */
  linesOf(path: string): Promise<string[] | undefined> {
    let lines = this.#lines.get(path);
    if (lines === undefined) {
      lines = readText(path).then((text) => (text === undefined ? undefined : splitLines(text)));
      this.#lines.set(path, lines);
    }
    return lines;
  }
}

/**
 * A file's text when it is a file of at most {@link MAX_FILE_BYTES} with no other hard links,
 * else undefined.
 * @param path absolute path.
 */
export async function readText(path: string): Promise<string | undefined> {
  const source = await readSource(path);
  return source !== undefined && 'text' in source ? source.text : undefined;
}

/**
 * A file's text, or its link count when it has other hard links (which may be outside the roots,
 * so it is not read, as the filesystem pack does not), or undefined when it is not a file of at
 * most {@link MAX_FILE_BYTES}.
 * @param path absolute path.
 */
export async function readSource(
  path: string,
): Promise<{ readonly text: string } | { readonly nlink: number } | undefined> {
  try {
    // Opened without waiting on a fifo, then checked: a stat first would leave a moment to swap.
    const bytes = await readRegularFile(path, MAX_FILE_BYTES, { singleLink: true });
    return { text: bytes.toString('utf8') };
  } catch (error) {
    const { code, nlink } = error as { code?: unknown; nlink?: unknown };
    if (code === LINKED && typeof nlink === 'number') return { nlink };
    return undefined;
  }
}

function human(position: LspPosition): { line: number; column: number } {
  return { line: position.line + 1, column: position.character + 1 };
}
