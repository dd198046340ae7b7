// RFC 6962 / RFC 9162 §2.1 Merkle tree hashing, proofs and their verification. Pure (node:crypto only).
//
// Proofs are built from MTH(D[lo:hi]) of ranges, asked of a `SubtreeSource`: a stored log answers the hash of a
// complete, aligned subtree (level, index) with one read, and every range the RFC's PATH and SUBPROOF recursions
// need splits into such subtrees; with the per-proof memo a proof costs O(log n) reads (the right edge of the tree
// is the same handful of subtrees at every level of the recursion).
import crypto, { createHash } from 'node:crypto';

export const EMPTY_ROOT = createHash('sha256').digest();

// Node's one-shot hash where it has one (20.12+): a third of createHash's cost on small inputs, which a tree pays
// once per row and per node.
const oneShot = (crypto as unknown as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'buffer') => Buffer }).hash;
const LEAF_PREFIX = Buffer.of(0);

export function leafHash(data: Uint8Array | string): Buffer {
  if (oneShot !== undefined) return oneShot('sha256', typeof data === 'string' ? `\u0000${data}` : Buffer.concat([LEAF_PREFIX, data]), 'buffer');
  return createHash('sha256').update(LEAF_PREFIX).update(data).digest();
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (oneShot !== undefined && left.length === 32 && right.length === 32) {
    const b = Buffer.allocUnsafe(65);
    b[0] = 1;
    b.set(left, 1);
    b.set(right, 33);
    return oneShot('sha256', b, 'buffer');
  }
  return createHash('sha256').update(Buffer.of(1)).update(left).update(right).digest();
}

/** The largest power of two smaller than n (n ≥ 2). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

const isPow2 = (n: number) => n > 0 && (n & (n - 1)) === 0;
const log2 = (n: number) => 31 - Math.clz32(n);

/** The hash of the complete subtree at (level, index): leaves index·2^level … (index+1)·2^level − 1. */
export type SubtreeSource = (level: number, index: number) => Promise<Buffer> | Buffer;

/** MTH over ranges, memoised for one proof. */
export class RangeHasher {
  private readonly memo = new Map<string, Promise<Buffer>>();
  reads = 0;
  constructor(private readonly source: SubtreeSource) {}

  mth(lo: number, hi: number): Promise<Buffer> {
    const key = `${lo}:${hi}`;
    let p = this.memo.get(key);
    if (!p) {
      p = this.compute(lo, hi);
      this.memo.set(key, p);
    }
    return p;
  }

  private async compute(lo: number, hi: number): Promise<Buffer> {
    const n = hi - lo;
    if (n <= 0) return EMPTY_ROOT;
    if (isPow2(n) && lo % n === 0) {
      this.reads++;
      return this.source(log2(n), lo / n);
    }
    const k = splitPoint(n);
    const [l, r] = await Promise.all([this.mth(lo, lo + k), this.mth(lo + k, hi)]);
    return nodeHash(l, r);
  }
}

/** RFC 9162 §2.1.3.1 PATH(m, D[lo:hi]): the inclusion proof of leaf m (0-based) in the tree of size n. */
export async function inclusionPath(h: RangeHasher, m: number, n: number): Promise<Buffer[]> {
  if (!(Number.isSafeInteger(m) && Number.isSafeInteger(n) && m >= 0 && m < n)) throw new RangeError(`no leaf ${m} in a tree of size ${n}`);
  const out: Buffer[] = [];
  let lo = 0;
  let hi = n;
  const tail: Promise<Buffer>[] = [];
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (m - lo < k) {
      tail.push(h.mth(lo + k, hi));
      hi = lo + k;
    } else {
      tail.push(h.mth(lo, lo + k));
      lo += k;
    }
  }
  // The recursion appends on the way out: the deepest sibling comes first.
  for (const p of (await Promise.all(tail)).reverse()) out.push(p);
  return out;
}

/** RFC 9162 §2.1.4.1 PROOF(m, D[n]) = SUBPROOF(m, D[n], true). */
export async function consistencyPath(h: RangeHasher, m: number, n: number): Promise<Buffer[]> {
  if (!(Number.isSafeInteger(m) && Number.isSafeInteger(n) && m >= 1 && m <= n)) throw new RangeError(`no consistency proof from ${m} to ${n}`);
  const tail: Promise<Buffer>[] = [];
  let lo = 0;
  let hi = n;
  let b = true;
  for (;;) {
    const size = hi - lo;
    const mm = m - lo;
    if (mm === size) {
      if (!b) tail.push(h.mth(lo, hi));
      break;
    }
    const k = splitPoint(size);
    if (mm <= k) {
      tail.push(h.mth(lo + k, hi));
      hi = lo + k;
    } else {
      tail.push(h.mth(lo, lo + k));
      lo += k;
      b = false;
    }
  }
  return (await Promise.all(tail)).reverse();
}

/** RFC 9162 §2.1.3.2: the root an inclusion proof leads to, or null when the proof cannot be for (index, size). */
export function rootFromInclusion(index: number, size: number, leaf: Uint8Array, path: readonly Uint8Array[]): Buffer | null {
  if (!(index >= 0 && index < size)) return null;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

export function verifyInclusion(index: number, size: number, leaf: Uint8Array, path: readonly Uint8Array[], root: Uint8Array): boolean {
  if (leaf.length !== 32 || root.length !== 32 || path.some((p) => p.length !== 32)) return false;
  const r = rootFromInclusion(index, size, leaf, path);
  return r !== null && r.equals(root);
}

/** RFC 9162 §2.1.4.2: does the proof show that the tree of size `first` is a prefix of the tree of size `second`? */
export function verifyConsistency(first: number, second: number, firstRoot: Uint8Array, secondRoot: Uint8Array, path: readonly Uint8Array[]): boolean {
  if (!(Number.isSafeInteger(first) && Number.isSafeInteger(second) && first >= 0 && first <= second)) return false;
  if (path.some((p) => p.length !== 32)) return false;
  if (first === second) return path.length === 0 && Buffer.from(firstRoot).equals(secondRoot);
  if (first === 0) return path.length === 0;
  if (path.length === 0) return false;
  const c = isPow2(first) ? [firstRoot, ...path] : [...path];
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = Buffer.from(c[0]!);
  let sr: Buffer = Buffer.from(c[0]!);
  for (const p of c.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(p, fr);
      sr = nodeHash(p, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}

/**
 * The right edge of a growing tree: the roots of its complete subtrees, largest first (a compact range). Appending
 * is O(1) amortised; `onNode` sees every complete subtree made (to store it); root() is O(log n).
 */
export class Frontier {
  constructor(
    public size = 0,
    readonly peaks: { level: number; hash: Buffer }[] = [],
  ) {}

  append(leaf: Buffer, onNode?: (level: number, index: number, hash: Buffer) => void): void {
    let level = 0;
    let hash = leaf;
    let index = this.size;
    onNode?.(0, index, hash);
    while (this.peaks.length > 0 && this.peaks[this.peaks.length - 1]!.level === level) {
      const left = this.peaks.pop()!;
      hash = nodeHash(left.hash, hash);
      level++;
      index = Math.floor(index / 2);
      onNode?.(level, index, hash);
    }
    this.peaks.push({ level, hash });
    this.size++;
  }

  root(): Buffer {
    if (this.peaks.length === 0) return EMPTY_ROOT;
    let r = this.peaks[this.peaks.length - 1]!.hash;
    for (let i = this.peaks.length - 2; i >= 0; i--) r = nodeHash(this.peaks[i]!.hash, r);
    return r;
  }

  /** The (level, index) of each peak of a tree of `size` leaves, largest first. */
  static peakPositions(size: number): { level: number; index: number }[] {
    const out: { level: number; index: number }[] = [];
    let offset = 0;
    for (let level = 52; level >= 0; level--) {
      const width = 2 ** level;
      if (size - offset >= width) {
        out.push({ level, index: offset / width });
        offset += width;
      }
    }
    return out;
  }
}

/** A whole tree in memory (offline verification, tests): every complete subtree, level by level. */
export class MemoryTree {
  readonly levels: Buffer[][] = [[]];

  constructor(leaves: Buffer[] = []) {
    for (const l of leaves) this.push(l);
  }

  push(leaf: Buffer): void {
    this.levels[0]!.push(leaf);
    let level = 0;
    let index = this.levels[0]!.length - 1;
    while (index % 2 === 1) {
      const row = this.levels[level]!;
      const parent = nodeHash(row[index - 1]!, row[index]!);
      level++;
      (this.levels[level] ??= []).push(parent);
      index = (index - 1) / 2;
    }
  }

  get size(): number {
    return this.levels[0]!.length;
  }

  hasher(): RangeHasher {
    return new RangeHasher((level, index) => {
      const h = this.levels[level]?.[index];
      if (!h) throw new RangeError(`no subtree (${level}, ${index})`);
      return h;
    });
  }

  root(size = this.size): Promise<Buffer> {
    return this.hasher().mth(0, size);
  }
}
