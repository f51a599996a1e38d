import type { Place } from './locations.ts';
import { MAX_DIAGNOSTICS, MAX_DIAGNOSTICS_CHARS } from './server.ts';

/** One diagnostic as results show it. */
export interface Problem extends Place {
  /** Severity, source, code and message in one line, as the note shows it beside the link. */
  readonly label: string;
  readonly severity: string;
  readonly code: string | null;
  readonly source: string | null;
  readonly message: string;
}

/** A file's diagnostics; `answered` is false when the server sent none in time. */
export interface FileProblems {
  readonly path: string;
  readonly answered: boolean;
  readonly problems: readonly Problem[];
  /** Diagnostics the server sent beyond what vaultd keeps of one file's, left out. */
  readonly leftOut: number;
}

/** A symbol as results show it. */
export interface SymbolEntry extends Place {
  /** Kind, name and container in one line, as the note shows it beside the link. */
  readonly label: string;
  readonly name: string;
  readonly kind: string;
  readonly container: string | null;
}

const SEVERITIES = ['error', 'warning', 'information', 'hint'];

/**
 * The name of an LSP diagnostic severity (1 error … 4 hint); a missing one counts as an error,
 * as the protocol lets clients decide.
 * @param severity the number.
 */
export function severityName(severity: number | undefined): string {
  return SEVERITIES[(severity ?? 1) - 1] ?? 'error';
}

const SYMBOL_KINDS = [
  'file',
  'module',
  'namespace',
  'package',
  'class',
  'method',
  'property',
  'field',
  'constructor',
  'enum',
  'interface',
  'function',
  'variable',
  'constant',
  'string',
  'number',
  'boolean',
  'array',
  'object',
  'key',
  'null',
  'enum member',
  'struct',
  'event',
  'operator',
  'type parameter',
];

/**
 * The name of an LSP symbol kind (5 class, 12 function…).
 * @param kind the number.
 */
export function symbolKindName(kind: number): string {
  return SYMBOL_KINDS[kind - 1] ?? `kind ${kind}`;
}

/**
 * The text of a hover answer: markup as it is, marked strings with their language as fences.
 * @param contents the `contents` of a hover answer.
 */
export function hoverText(contents: unknown): string {
  if (contents === undefined || contents === null) return '';
  if (typeof contents === 'string') return contents.trim();
  if (Array.isArray(contents)) return contents.map(hoverText).filter(Boolean).join('\n\n');
  if (typeof contents === 'object') {
    const c = contents as { kind?: unknown; language?: unknown; value?: unknown };
    if (typeof c.value !== 'string') return '';
    if (typeof c.language === 'string') return `\`\`\`${c.language}\n${c.value.trim()}\n\`\`\``;
    return c.value.trim();
  }
  return '';
}

/** `path:line:column`, as editors and compilers print a place. */
function at(place: Place): string {
  return `${place.path}:${place.line}:${place.column}`;
}

function quoteSource(place: Place): string[] {
  return place.text === '' ? [] : [`    ${place.line} | ${place.text}`];
}

/**
 * The one-line summary of a diagnostic: severity, source and code, message.
 * @param problem its fields.
 */
export function problemLabel(problem: {
  severity: string;
  source: string | null;
  code: string | null;
  message: string;
}): string {
  const code = [problem.source, problem.code].filter((x) => x !== null).join(' ');
  return `${problem.severity}${code === '' ? '' : ` ${code}`}: ${problem.message}`;
}

/**
 * The one-line summary of a symbol: kind, name, container.
 * @param symbol its fields.
 */
export function symbolLabel(symbol: {
  kind: string;
  name: string;
  container: string | null;
}): string {
  return `${symbol.kind} ${symbol.name}${symbol.container === null ? '' : ` in ${symbol.container}`}`;
}

/**
 * The readable text of a diagnostics result.
 * @param shown the path asked for.
 * @param directory whether it was a folder.
 * @param results each file's diagnostics.
 * @param more whether the folder held more files than were looked at.
 */
export function renderDiagnostics(
  shown: string,
  directory: boolean,
  results: readonly FileProblems[],
  more: boolean,
): string {
  const problems = results.flatMap((r) => r.problems);
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.filter((p) => p.severity === 'warning').length;
  const others = problems.length - errors - warnings;
  const counts = [
    `${errors} error${errors === 1 ? '' : 's'}`,
    `${warnings} warning${warnings === 1 ? '' : 's'}`,
    ...(others > 0 ? [`${others} other${others === 1 ? '' : 's'}`] : []),
  ].join(', ');
  const scope = directory
    ? `${results.length} file${results.length === 1 ? '' : 's'} in ${shown}`
    : shown;
  const lines = [`${counts} in ${scope}`];
  if (directory && results.length === 0)
    lines[0] = `No source file a language server serves in ${shown}`;
  for (const problem of problems) {
    lines.push('', `${at(problem)}: ${problem.label}`, ...quoteSource(problem));
  }
  const silent = results.filter((r) => !r.answered).map((r) => r.path);
  if (silent.length > 0) {
    lines.push(
      '',
      `No answer in time for: ${silent.join(', ')} (try again; a cold project takes longer)`,
    );
  }
  for (const r of results.filter((f) => f.leftOut > 0)) {
    lines.push(
      '',
      `${r.leftOut} more diagnostic${r.leftOut === 1 ? '' : 's'} of ${r.path} left out (vaultd keeps a file's first ${MAX_DIAGNOSTICS}, within ${MAX_DIAGNOSTICS_CHARS / 1024 / 1024} MiB of text)`,
    );
  }
  if (more)
    lines.push('', 'More files are in the folder than were looked at (tools.lsp.max_files).');
  return lines.join('\n');
}

/**
 * The readable text of a list of symbols.
 * @param title the first line.
 * @param entries the symbols.
 * @param outside how many were left out as outside the roots.
 */
export function renderSymbols(
  title: string,
  entries: readonly SymbolEntry[],
  outside: number,
): string {
  const lines = [`${title}: ${entries.length === 0 ? 'none' : entries.length}`];
  for (const s of entries) lines.push(`- ${s.label} (${at(s)})`);
  if (outside > 0) lines.push(`(${outside} outside the folders this tool may read, left out)`);
  return lines.join('\n');
}

/**
 * The readable text of a hover result.
 * @param shown the file.
 * @param line the line asked for.
 * @param column the column asked for.
 * @param source the source line.
 * @param text the hover text.
 */
export function renderHover(
  shown: string,
  line: number,
  column: number,
  source: string,
  text: string,
): string {
  const head = [
    `${shown}:${line}:${column}`,
    ...(source === '' ? [] : [`    ${line} | ${source}`]),
  ];
  return [...head, '', text === '' ? 'Nothing to show here (no symbol at that place).' : text].join(
    '\n',
  );
}

/**
 * The readable text of definition or reference locations.
 * @param title the first line.
 * @param places the locations.
 * @param outside how many were left out as outside the roots.
 */
export function renderPlaces(title: string, places: readonly Place[], outside: number): string {
  const lines = [`${title}: ${places.length === 0 ? 'none found' : places.length}`];
  for (const place of places) lines.push('', at(place), ...quoteSource(place));
  if (outside > 0) {
    lines.push(
      '',
      `(${outside} outside the folders this tool may read, such as the TypeScript library, left out)`,
    );
  }
  return lines.join('\n');
}
