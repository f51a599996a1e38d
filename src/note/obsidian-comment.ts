import type { NoteStructure } from './structure.ts';

/**
 * Whether an Obsidian comment (`%%`) is open at `upTo`. Obsidian hides everything from a `%%`
 * that is never closed to the end of the note, so a section vaultd puts after it (the Approval
 * section, with the preview a person decides on) would not be seen, while the agent's text above
 * it is. Counts the `%%` outside the front-matter, fenced code and inline code spans, in one pass.
 * @param text the note.
 * @param structure the note's structure (its fences and front-matter).
 * @param upTo the offset where vaultd's text goes.
 */
export function isObsidianCommentOpen(
  text: string,
  structure: NoteStructure,
  upTo: number,
): boolean {
  let at = Math.min(upTo, structure.frontMatter?.end ?? 0);
  let count = 0;
  // Fences come in note order; one nested in another lies inside the outer one's span.
  for (const fence of structure.fences) {
    if (fence.start >= upTo) break;
    if (fence.end <= at) continue;
    if (fence.start > at) count += countOutsideCodeSpans(text.slice(at, fence.start));
    at = Math.min(upTo, fence.end);
  }
  if (at < upTo) count += countOutsideCodeSpans(text.slice(at, upTo));
  return count % 2 === 1;
}

/**
 * The `%%` in a text outside code spans, paragraph by paragraph: a code span never runs past a
 * blank line or a heading's line (counting one across them would put vaultd's own `%%` where it
 * opens a comment instead of closing one).
 */
function countOutsideCodeSpans(segment: string): number {
  if (!segment.includes('%%')) return 0;
  let count = 0;
  let chunk: string[] = [];
  const flush = (): void => {
    if (chunk.length > 0) count += countInParagraph(chunk.join('\n'));
    chunk = [];
  };
  for (const line of segment.split(/\r\n|\r|\n/)) {
    if (line.trim() === '') flush();
    else if (/^ {0,3}#{1,6}(?:[ \t]|$)/.test(line)) {
      flush();
      count += countInParagraph(line);
    } else chunk.push(line);
  }
  flush();
  return count;
}

/**
 * The `%%` in one paragraph outside code spans: a run of backticks opens a span closed by the next
 * run of the same length (none: the run is text). The next run of each length is found
 * beforehand, so runs of many lengths that never close cost one pass, not one pass each.
 */
function countInParagraph(segment: string): number {
  if (!segment.includes('%%')) return 0;
  const runs: { start: number; end: number }[] = [];
  for (const m of segment.matchAll(/`+/g))
    runs.push({ start: m.index, end: m.index + m[0].length });
  const next: (number | undefined)[] = new Array<number | undefined>(runs.length);
  const later = new Map<number, number>();
  for (let i = runs.length - 1; i >= 0; i--) {
    const run = runs[i] as { start: number; end: number };
    next[i] = later.get(run.end - run.start);
    later.set(run.end - run.start, i);
  }
  let count = 0;
  let at = 0;
  for (let i = 0; i < runs.length;) {
    const close = next[i];
    if (close === undefined) {
      i++;
      continue;
    }
    count += countPairs(segment.slice(at, (runs[i] as { start: number }).start));
    at = (runs[close] as { end: number }).end;
    i = close + 1;
  }
  return count + countPairs(segment.slice(at));
}

function countPairs(text: string): number {
  return text.split('%%').length - 1;
}
