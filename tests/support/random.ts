/**
 * Seeded randomness for the fuzz tests: the same seed gives the same inputs, so a failure is
 * replayed with SVC_FUZZ_SEED=<the seed in the test's name>.
 */

/** The seed of a fuzz test: SVC_FUZZ_SEED when set, else `fallback`. */
export function fuzzSeed(fallback: number): number {
  const given = process.env.SVC_FUZZ_SEED;
  return given ? Number(given) : fallback;
}

/** mulberry32: small, fast, good enough to spread inputs; deterministic per seed. */
export function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (max: number) => Math.floor(next() * max);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const chance = (p: number) => next() < p;
  const bytes = (length: number) => {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = int(256);
    return out;
  };
  const text = (length: number, alphabet = "abcXYZ019-_.,;:/?#[]@!$&'()*+=% \"{}<>\\^`|~\u00e9\u4e2d\ud83d\ude00") =>
    Array.from({ length }, () => {
      const symbols = Array.from(alphabet); // code points: never half a surrogate pair
      return symbols[int(symbols.length)];
    }).join("");
  return { next, int, pick, chance, bytes, text };
}

export type Random = ReturnType<typeof prng>;
