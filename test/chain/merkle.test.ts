// RFC 6962 Merkle hashing and proofs: the RFC 6962 test vectors (as published with transparency-dev/merkle's
// reference tests), an independent reference hasher written from the RFC's definitions for every tree of 1 … 1,000
// leaves, proofs that fail when anything is changed, and O(log n) subtree reads per proof.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { consistencyPath, EMPTY_ROOT, Frontier, inclusionPath, leafHash, MemoryTree, verifyConsistency, verifyInclusion } from '../../src/chain/merkle.js';

const hx = (s: string) => Buffer.from(s, 'hex');
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(hx);
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
// (leaf 1-based, tree size, path)
const INCLUSION: [number, number, string[]][] = [
  [1, 1, []],
  [
    1,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    6,
    8,
    [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [3, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
  [
    2,
    5,
    [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
];
const CONSISTENCY: [number, number, string[]][] = [
  [1, 1, []],
  [
    1,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    6,
    8,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [2, 5, ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b']],
  [
    6,
    7,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
];

// ---- The reference: RFC 6962 §2.1 written out directly (MTH, PATH, SUBPROOF), memoised, nothing shared. ----
const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
function reference(leaves: Buffer[]) {
  const memo = new Map<string, Buffer>();
  const k = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1);
  const mth = (lo: number, hi: number): Buffer => {
    const key = `${lo},${hi}`;
    if (!memo.has(key)) memo.set(key, hi - lo === 1 ? sha(Buffer.of(0), leaves[lo]!) : sha(Buffer.of(1), mth(lo, lo + k(hi - lo)), mth(lo + k(hi - lo), hi)));
    return memo.get(key)!;
  };
  const path = (m: number, lo: number, hi: number): Buffer[] =>
    hi - lo === 1
      ? []
      : m < k(hi - lo)
        ? [...path(m, lo, lo + k(hi - lo)), mth(lo + k(hi - lo), hi)]
        : [...path(m - k(hi - lo), lo + k(hi - lo), hi), mth(lo, lo + k(hi - lo))];
  const sub = (m: number, lo: number, hi: number, b: boolean): Buffer[] =>
    m === hi - lo
      ? b
        ? []
        : [mth(lo, hi)]
      : m <= k(hi - lo)
        ? [...sub(m, lo, lo + k(hi - lo), b), mth(lo + k(hi - lo), hi)]
        : [...sub(m - k(hi - lo), lo + k(hi - lo), hi, false), mth(lo, lo + k(hi - lo))];
  return { root: (n: number) => mth(0, n), path: (m: number, n: number) => path(m, 0, n), proof: (m: number, n: number) => sub(m, 0, n, true) };
}

describe('RFC 6962 test vectors', () => {
  const tree = new MemoryTree(LEAVES.map((l) => leafHash(l)));
  it('roots of the trees of 0 … 8 leaves', async () => {
    expect(EMPTY_ROOT.toString('hex')).toBe(ROOTS[0]);
    for (let n = 1; n <= 8; n++) expect((await tree.root(n)).toString('hex')).toBe(ROOTS[n]);
    const f = new Frontier();
    for (let n = 1; n <= 8; n++) {
      f.append(leafHash(LEAVES[n - 1]!));
      expect(f.root().toString('hex')).toBe(ROOTS[n]);
    }
  });

  it('inclusion proofs: built, verified, and refused when corrupted', async () => {
    for (const [leaf, size, expected] of INCLUSION) {
      const path = await inclusionPath(tree.hasher(), leaf - 1, size);
      expect(path.map((p) => p.toString('hex'))).toEqual(expected);
      const root = hx(ROOTS[size]!);
      const lh = leafHash(LEAVES[leaf - 1]!);
      expect(verifyInclusion(leaf - 1, size, lh, path, root)).toBe(true);
      const probes: [number, number, Buffer, Buffer[], Buffer][] = [
        [leaf, size, lh, path, root],
        [leaf - 2, size, lh, path, root],
        [leaf - 1, size * 2, lh, path, root],
        [leaf - 1, size, leafHash('WrongLeaf'), path, root],
        [leaf - 1, size, lh, path, EMPTY_ROOT],
        [leaf - 1, size, lh, [...path, root], root],
        [leaf - 1, size, lh, [root, ...path], root],
        ...path.map((_, i): [number, number, Buffer, Buffer[], Buffer] => [
          leaf - 1,
          size,
          lh,
          path.map((p, j) => (j === i ? Buffer.from(p.map((b, x) => (x === 0 ? b ^ 8 : b))) : p)),
          root,
        ]),
      ];
      if (path.length > 0) probes.push([leaf - 1, size, lh, path.slice(0, -1), root]);
      for (const p of probes) expect(verifyInclusion(...p)).toBe(false);
    }
  });

  it('consistency proofs: built, verified, and refused when corrupted', async () => {
    for (const [m, n, expected] of CONSISTENCY) {
      const path = await consistencyPath(tree.hasher(), m, n);
      expect(path.map((p) => p.toString('hex'))).toEqual(expected);
      const [r1, r2] = [hx(ROOTS[m]!), hx(ROOTS[n]!)];
      expect(verifyConsistency(m, n, r1, r2, path)).toBe(true);
      if (path.length === 0) continue;
      const bad: [number, number, Buffer, Buffer, Buffer[]][] = [
        [m - 1, n, r1, r2, path],
        [m + 1, n, r1, r2, path],
        [m, n * 2, r1, r2, path],
        [m, n, r2, r1, path],
        [m, n, r1, r2, []],
        [m, n, r1, r2, [...path, r1]],
        [m, n, r1, r2, [path[0]!, ...path]],
        [m, n, r1, r2, path.slice(0, -1)],
        ...path.map((_, i): [number, number, Buffer, Buffer, Buffer[]] => [
          m,
          n,
          r1,
          r2,
          path.map((p, j) => (j === i ? Buffer.from(p.map((b, x) => (x === 0 ? b ^ 16 : b))) : p)),
        ]),
      ];
      for (const b of bad) expect(verifyConsistency(...b)).toBe(false);
    }
  });
});

describe('against the reference hasher, trees of 1 … 1,000 leaves', () => {
  const N = 1000;
  const leaves = Array.from({ length: N }, (_, i) => Buffer.from(`row ${i}`));
  const ref = reference(leaves);
  const tree = new MemoryTree(leaves.map((l) => leafHash(l)));
  const f = new Frontier();

  it('every root, by the frontier and by stored subtrees', async () => {
    for (let n = 1; n <= N; n++) {
      f.append(leafHash(leaves[n - 1]!));
      const want = ref.root(n);
      expect(f.root().equals(want)).toBe(true);
      expect((await tree.root(n)).equals(want)).toBe(true);
    }
  });

  it('inclusion and consistency proofs of every size (first, last, middle and a stride of leaves), each verified', async () => {
    for (let n = 1; n <= N; n++) {
      const root = ref.root(n);
      const ms = new Set([0, n - 1, n >> 1, (n * 7 + 3) % n]);
      for (const m of ms) {
        const path = await inclusionPath(tree.hasher(), m, n);
        expect(Buffer.concat(path).equals(Buffer.concat(ref.path(m, n)))).toBe(true);
        expect(verifyInclusion(m, n, leafHash(leaves[m]!), path, root)).toBe(true);
        const first = m + 1;
        const proof = await consistencyPath(tree.hasher(), first, n);
        expect(Buffer.concat(proof).equals(Buffer.concat(ref.proof(first, n)))).toBe(true);
        expect(verifyConsistency(first, n, ref.root(first), root, proof)).toBe(true);
      }
    }
  });

  it('a proof reads O(log n) subtrees', async () => {
    for (const n of [1000, 999, 513, 777]) {
      for (const m of [0, n - 1, 500 % n]) {
        const h = tree.hasher();
        await inclusionPath(h, m, n);
        expect(h.reads).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(n)) + 1);
        const c = tree.hasher();
        await consistencyPath(c, m + 1, n);
        expect(c.reads).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(n)) + 1);
      }
    }
  });
});
