const CALL =
  '```json\n{"tool_call": {"name": "bench_echo", "parameters": {"text": "hello"}}}\n```\n';

const PARAGRAPH =
  'Agents write notes like this one: a paragraph of prose with **bold**, _emphasis_, `code`, a [link](https://example.com/page) and a [[wiki link]], then a list.\n\n' +
  '- first item with `inline code`\n- second item\n  - nested item\n\n' +
  '> a quotation that spans\n> two lines\n\n' +
  '```ts\nconst x = 1;\n```\n\n';

/**
 * A typical note of about `bytes` bytes: front-matter, prose, lists, quotes, code, and one call
 * in the middle.
 * @param bytes the wanted size.
 */
export function typicalNote(bytes: number): string {
  const head = '---\ntitle: Parse bench\ntags: [bench, parse]\n---\n# Parse bench\n\n';
  const parts: string[] = [head];
  let size = head.length + CALL.length;
  let placed = false;
  while (size < bytes) {
    parts.push(PARAGRAPH);
    size += PARAGRAPH.length;
    if (!placed && size >= bytes / 2) {
      parts.push(CALL);
      placed = true;
    }
  }
  if (!placed) parts.push(CALL);
  return parts.join('');
}

/**
 * A worst case of about `bytes` bytes: block quotes and lists nested `depth` deep, again and
 * again, with a call at the bottom of every nest (the parser must track every container).
 * @param bytes the wanted size.
 * @param depth nesting depth of each nest.
 */
export function nestedNote(bytes: number, depth: number): string {
  const parts: string[] = ['---\ntitle: Nested\n---\n'];
  let size = 0;
  let n = 0;
  while (size < bytes) {
    const lines: string[] = [];
    let prefix = '';
    for (let d = 0; d < depth; d++) {
      // Alternate a quote and a list item, the way callouts hold lists that hold quotes.
      prefix += d % 2 === 0 ? '> ' : '- ';
      lines.push(`${prefix}level ${d} of nest ${n} with *some* text`);
      if (d % 2 === 1) prefix = prefix.slice(0, -2) + '  ';
    }
    const call = `{"tool_call": {"name": "bench_echo", "parameters": {"text": "nest ${n}"}}}`;
    lines.push(`${prefix}\`\`\`json`, `${prefix}${call}`, `${prefix}\`\`\``, '');
    const block = lines.join('\n') + '\n';
    parts.push(block);
    size += block.length;
    n++;
  }
  return parts.join('');
}

/**
 * Block quotes `depth` deep, line after line, with a call at the end: the shape remark-parse was
 * quadratic on.
 * @param bytes the wanted size.
 * @param depth quote depth of every line.
 */
export function quotesNote(bytes: number, depth = 8): string {
  const prefix = '> '.repeat(depth);
  const line = `${prefix}a quoted line of an agent's research notes, kept as written\n`;
  const call = `${prefix}\`\`\`json\n${prefix}{"tool_call": {"name": "bench_echo", "parameters": {"text": "quoted"}}}\n${prefix}\`\`\`\n`;
  return line.repeat(Math.max(1, Math.ceil((bytes - call.length) / line.length))) + call;
}

/**
 * A list nested ever deeper (a new level every line, back to the top every `depth` lines), with a
 * call at the end.
 * @param bytes the wanted size.
 * @param depth how deep each run of nesting goes.
 */
export function listsNote(bytes: number, depth = 40): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `${'  '.repeat(i % depth)}- item ${i} of a long outline\n`;
    parts.push(line);
    size += line.length;
  }
  parts.push(
    '\n```json\n{"tool_call": {"name": "bench_echo", "parameters": {"text": "listed"}}}\n```\n',
  );
  return parts.join('');
}

/**
 * A note of nothing but calls (about 90 bytes each), each with a text of its own.
 * @param bytes the wanted size.
 */
export function callsNote(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const block = `\`\`\`json\n{"tool_call": {"name": "bench_echo", "parameters": {"text": "c${i}"}}}\n\`\`\`\n\n`;
    parts.push(block);
    size += block.length;
  }
  return parts.join('');
}

/**
 * `count` calls of `bench_echo` in about `bytes` bytes, each text padded to share the size out: a
 * note of as many calls as `max_calls_per_note` allows, for the daemon (every call runs and gets
 * a result).
 * @param bytes the wanted size.
 * @param count how many calls.
 */
export function manyCallsNote(bytes: number, count: number): string {
  const frame =
    '```json\n{"tool_call": {"name": "bench_echo", "parameters": {"text": ""}}}\n```\n\n';
  const pad = Math.max(0, Math.floor(bytes / count) - frame.length - 6);
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    const text = `c${i} ${'x'.repeat(pad)}`;
    parts.push(
      `\`\`\`json\n{"tool_call": {"name": "bench_echo", "parameters": {"text": "${text}"}}}\n\`\`\`\n\n`,
    );
  }
  return parts.join('');
}

/**
 * One paragraph under quotes `depth` deep whose lines after the first are lazy (no `>`), then a
 * call at the same depth: every quote of the nest spans every lazy line, the shape that made
 * markdown-it's block parse (and a parser built on its rules) read each line once per quote.
 * @param bytes the wanted size.
 * @param depth quote depth, at most `bytes / 16` so that 1 KB holds it.
 */
export function lazyNote(bytes: number, depth = 500): string {
  const deep = Math.min(depth, Math.floor(bytes / 16));
  const prefix = '>'.repeat(deep);
  const call = `${prefix} \`\`\`json\n${prefix} {"tool_call": {"name": "bench_echo", "parameters": {"text": "lazy"}}}\n${prefix} \`\`\`\n`;
  const head = `${prefix} a paragraph deep in quotes, continued lazily\n`;
  const line = 'a lazy line of the same paragraph, with no quote marker\n';
  const lines = Math.max(1, Math.ceil((bytes - head.length - call.length) / line.length));
  return head + line.repeat(lines) + call;
}

/**
 * Link reference definitions, one a line (`[d1]: /u1`), then a call: the note of many small
 * blocks that was slowest per byte (bench/README.md item 39).
 * @param bytes the wanted size.
 */
export function definitionsNote(bytes: number): string {
  const parts: string[] = [];
  let size = CALL.length + 1;
  for (let i = 0; size < bytes; i++) {
    const line = `[d${i}]: /u${i}\n`;
    parts.push(line);
    size += line.length;
  }
  parts.push('\n', CALL);
  return parts.join('');
}

/**
 * One line of list markers (`- - - … x`), a list item nested in an item at every marker, then a
 * call: the line every item once read again to its end (bench/README.md item 38).
 * @param bytes the wanted size.
 */
export function markersNote(bytes: number): string {
  const count = Math.max(1, Math.floor((bytes - CALL.length - 3) / 2));
  return `${'- '.repeat(count)}x\n\n${CALL}`;
}
