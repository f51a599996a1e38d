/**
 * A note with one `bench_echo` call, about the size of a short agent note.
 * @param i the note's number, used in its title and call text.
 */
export function echoNote(i: number): string {
  const call = { tool_call: { name: 'bench_echo', parameters: { text: `echo ${i}` } } };
  return [
    '---',
    `title: Bench note ${i}`,
    'tags: [bench]',
    '---',
    `# Bench note ${i}`,
    '',
    'An agent asks for something to be echoed back.',
    '',
    '```json',
    JSON.stringify(call),
    '```',
    '',
  ].join('\n');
}

/**
 * A note with `calls` calls of `bench_sleep`, each with a distinct tag (so none is cached).
 * @param i the note's number.
 * @param calls how many calls.
 * @param ms how long each sleeps.
 */
export function sleepNote(i: number, calls: number, ms: number): string {
  const blocks: string[] = [];
  for (let c = 0; c < calls; c++) {
    const call = { tool_call: { name: 'bench_sleep', parameters: { ms, tag: `n${i}c${c}` } } };
    blocks.push('```json', JSON.stringify(call), '```', '');
  }
  return ['---', `title: Sleep note ${i}`, '---', '', ...blocks].join('\n');
}

/**
 * A resting note as an archive folder holds it: a call with its result already written.
 * @param i the note's number.
 */
export function archivedNote(i: number): string {
  return `${echoNote(i).replace('---\n#', 'status: done\n---\n#')}\n## Tool Results\n\n> [!success] bench_echo\n> echo ${i}\n`;
}

/**
 * A file name with a zero-padded number, so names sort in creation order.
 * @param prefix what the name starts with.
 * @param i the number.
 */
export function noteName(prefix: string, i: number): string {
  return `${prefix}-${String(i).padStart(6, '0')}.md`;
}
