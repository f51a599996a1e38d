/**
 * Names close to a misspelt one, closest first: small edit distance, or one contains the other.
 * @param wanted the name asked for.
 * @param names the names that exist.
 * @param max most names returned; default 5.
 */
export function findCloseNames(wanted: string, names: readonly string[], max = 5): string[] {
  const limit = Math.max(2, Math.floor(wanted.length / 3));
  return names
    .map((name) => ({ name, distance: editDistance(wanted, name) }))
    .filter(
      ({ name, distance }) =>
        distance <= limit ||
        (wanted.length >= 3 && (name.includes(wanted) || wanted.includes(name))),
    )
    .sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name))
    .slice(0, max)
    .map(({ name }) => name);
}

/**
 * Levenshtein distance: the fewest single-character edits that turn one text into the other.
 * @param a one text.
 * @param b the other.
 */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
