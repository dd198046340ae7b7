// A fixture array read as a fixed-length tuple, checked: tests that fill `nodes` in beforeAll and destructure it
// (`const [a, b] = ...`) get defined elements under noUncheckedIndexedAccess, and a fixture that came up short
// fails loudly here instead of as "cannot read properties of undefined" further on.

type Tuple<T, N extends number, R extends T[] = []> = R['length'] extends N ? R : Tuple<T, N, [...R, T]>;

/** The first `n` entries of `xs` as an n-tuple; throws if there are fewer than `n` or one of them is undefined. */
export function firstN<T, N extends number>(xs: readonly T[], n: N): Tuple<T, N> {
  const head = xs.slice(0, n);
  if (head.length < n || head.some((x) => x === undefined)) throw new Error(`expected ${n} entries, the fixture has ${xs.length}`);
  return head as Tuple<T, N>;
}
