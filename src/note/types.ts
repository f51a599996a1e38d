import type { ErrorCode } from '../protocol/errors.ts';

/** A place in a note's original text (1-based line and column, 0-based UTF-16 offset). */
export interface Place {
  readonly line: number;
  readonly column: number;
  readonly offset: number;
}

/** A problem found in a note: never thrown, always reported with a place (unified style). */
export interface Diagnostic {
  readonly severity: 'error' | 'warning';
  /** An error code from the catalogue, or a rule id for warnings (e.g. `call-after-results`). */
  readonly code: ErrorCode | string;
  /** Tells the agent what to change. */
  readonly message: string;
  readonly start: Place;
  readonly end: Place;
  /** The call the problem belongs to, when there is one. */
  readonly callId?: string;
}

/** A `tool_call` block found in a note. */
export interface FoundCall {
  /** From `tool_call.id`, or derived stably from the call and its occurrence (see `deriveCallId`). */
  readonly id: string;
  readonly explicitId: boolean;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
  /** Offsets of the whole fenced block (opening fence to closing fence) in the original text. */
  readonly start: Place;
  readonly end: Place;
}

/** A fenced json block that mentions `tool_call` but is not a usable call. */
export interface InvalidBlock {
  /** Derived from the block text and occurrence, so the error is reported once. */
  readonly id: string;
  /** The tool name, when it could be read. */
  readonly name: string | undefined;
  readonly code: 'INVALID_JSON' | 'INVALID_CALL';
  readonly message: string;
  /** True when the fence is not closed: the note may still be being written. */
  readonly unclosed: boolean;
  /**
   * For a fence left open at the end of the note that holds a whole call: the hash of its
   * arguments. The block then has the id the call gets once the fence is closed (vaultd closes it
   * to write results after it), and its error result names those arguments, so the call does not
   * run unless that result is deleted.
   */
  readonly argsHash?: string;
  readonly start: Place;
  readonly end: Place;
}

/** A `tool_result` already written back into the note. */
export interface FoundResult {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  /** `metadata.arguments_hash`: the arguments the result is for, to tell a fixed call. */
  readonly argsHash?: string;
  /** `error.code` of an error result (`INVALID_CALL` for a block that could not be read as a call). */
  readonly errorCode?: string;
}

/** Front-matter as split from the text, never evaluated. */
export interface FrontMatterSpan {
  /** `yaml` for `---` fences (or `---yaml`), otherwise the language named after the fence (`js`, `toml`…). */
  readonly lang: string;
  /** Offset of the first byte of the opening fence (after any BOM). */
  readonly start: number;
  /** Offset of the first byte after the closing fence's line ending. */
  readonly end: number;
  /** Offsets of the YAML source between the fences. */
  readonly contentStart: number;
  readonly contentEnd: number;
}

/** Everything the pipeline needs to know about one note. */
export interface ParsedNote {
  readonly frontMatter: FrontMatterSpan | null;
  /** Values of the front-matter as plain data when it is YAML and parses; `{}` otherwise. */
  readonly data: Readonly<Record<string, unknown>>;
  /** Calls in block order, outside vaultd's own sections. */
  readonly calls: readonly FoundCall[];
  readonly invalid: readonly InvalidBlock[];
  /** Results already in the note, by call id. */
  readonly results: ReadonlyMap<string, FoundResult>;
  readonly diagnostics: readonly Diagnostic[];
}
