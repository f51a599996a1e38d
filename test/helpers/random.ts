/**
 * mulberry32: a small seeded generator for property and differential tests, so a failing run can
 * be replayed from its seed.
 * @param seed any integer.
 * @returns a function giving numbers in [0, 1).
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * {@link seededRandom} as whole numbers: a function giving an integer in [0, n).
 * @param seed any integer.
 */
export function seededInts(seed: number): (n: number) => number {
  const random = seededRandom(seed);
  return (n) => Math.floor(random() * n);
}
