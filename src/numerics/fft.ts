// Radix-2 complex FFT (iterative Cooley–Tukey, in place on split real/imaginary Float64Arrays) and the 2-D helpers
// the pseudo-spectral solvers share. Convention: forward X[k] = Σ x[j] e^(−2πi jk/n) (unnormalised); inverse carries
// the 1/n. Deterministic: fixed operation order, twiddles from Math.cos/Math.sin of exact multiples of 2π/n.

export function isPowerOfTwo(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && (n & (n - 1)) === 0;
}

export interface FftPlan {
  n: number;
  /** bitReverse[i] = i with its log2(n) bits reversed. */
  bitReverse: Uint32Array;
  /** cos(2πt/n), sin(2πt/n) for t < n/2. */
  cos: Float64Array;
  sin: Float64Array;
}

export function createFftPlan(n: number): FftPlan {
  if (!isPowerOfTwo(n)) throw new RangeError(`FFT length must be a power of two, got ${n}`);
  const bits = Math.round(Math.log2(n));
  const bitReverse = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    let r = 0;
    for (let b = 0; b < bits; b++) r |= ((i >>> b) & 1) << (bits - 1 - b);
    bitReverse[i] = r;
  }
  const half = Math.max(1, n >>> 1);
  const cos = new Float64Array(half);
  const sin = new Float64Array(half);
  for (let t = 0; t < half; t++) {
    cos[t] = Math.cos((2 * Math.PI * t) / n);
    sin[t] = Math.sin((2 * Math.PI * t) / n);
  }
  return { n, bitReverse, cos, sin };
}

/**
 * In-place transform of the n elements re/im[offset + j·stride], j = 0 … n−1. Forward (sign −) is unnormalised;
 * inverse (sign +) does not scale either — callers scale (fft / ifft below do).
 */
export function fftStrided(plan: FftPlan, re: Float64Array, im: Float64Array, offset: number, stride: number, inverse: boolean): void {
  const { n, bitReverse, cos, sin } = plan;
  for (let i = 0; i < n; i++) {
    const j = bitReverse[i]!;
    if (i < j) {
      const a = offset + i * stride;
      const b = offset + j * stride;
      const tr = re[a]!;
      re[a] = re[b]!;
      re[b] = tr;
      const ti = im[a]!;
      im[a] = im[b]!;
      im[b] = ti;
    }
  }
  const sign = inverse ? 1 : -1;
  for (let size = 2; size <= n; size <<= 1) {
    const half = size >>> 1;
    const tableStep = n / size;
    for (let k = 0; k < half; k++) {
      const wr = cos[k * tableStep]!;
      const wi = sign * sin[k * tableStep]!;
      for (let start = 0; start < n; start += size) {
        const a = offset + (start + k) * stride;
        butterfly(re, im, a, a + half * stride, wr, wi);
      }
    }
  }
}

/** Forward 1-D FFT in place (unnormalised). */
export function fft(re: Float64Array, im: Float64Array, plan: FftPlan = createFftPlan(re.length)): void {
  fftStrided(plan, re, im, 0, 1, false);
}

/** Inverse 1-D FFT in place, including the 1/n. */
export function ifft(re: Float64Array, im: Float64Array, plan: FftPlan = createFftPlan(re.length)): void {
  fftStrided(plan, re, im, 0, 1, true);
  const s = 1 / plan.n;
  for (let i = 0; i < plan.n; i++) {
    re[i] = re[i]! * s;
    im[i] = im[i]! * s;
  }
}

/**
 * Signed Fourier indices of an n-point transform in FFT order: 0, 1, …, n/2−1, −n/2, …, −1 (the Nyquist index is
 * reported as −n/2).
 */
export function fftIndices(n: number): Int32Array {
  const m = new Int32Array(n);
  for (let i = 0; i < n; i++) m[i] = i < n / 2 ? i : i - n;
  return m;
}

/**
 * Angular wavenumbers 2πm/L of an n-point periodic grid of length L for a first derivative: the Nyquist entry is
 * 0 (its derivative is not representable as a real field).
 */
export function derivativeWavenumbers(n: number, length: number): Float64Array {
  const idx = fftIndices(n);
  const k = new Float64Array(n);
  for (let i = 0; i < n; i++) k[i] = n > 1 && idx[i] === -n / 2 ? 0 : (2 * Math.PI * idx[i]!) / length;
  return k;
}

/**
 * Row-major (j·nx + i) derivative wavenumbers of a doubly periodic nx × ny grid of size lx × ly, and the 2/3-rule
 * de-aliasing mask (1 where 3|i| < nx and 3|j| < ny in signed FFT indices, else 0).
 */
export function spectralGrid(nx: number, ny: number, lx: number, ly: number): { kx: Float64Array; ky: Float64Array; mask: Float64Array } {
  const kxd = derivativeWavenumbers(nx, lx);
  const kyd = derivativeWavenumbers(ny, ly);
  const ix = fftIndices(nx);
  const iy = fftIndices(ny);
  const size = nx * ny;
  const kx = new Float64Array(size);
  const ky = new Float64Array(size);
  const mask = new Float64Array(size);
  for (let j = 0; j < ny; j++) {
    for (let i = 0; i < nx; i++) {
      const q = j * nx + i;
      kx[q] = kxd[i]!;
      ky[q] = kyd[j]!;
      mask[q] = 3 * Math.abs(ix[i]!) < nx && 3 * Math.abs(iy[j]!) < ny ? 1 : 0;
    }
  }
  return { kx, ky, mask };
}

/**
 * 2-D FFT on row-major arrays of ny rows × nx columns (index j·nx + i; i runs along x). Forward is unnormalised;
 * inverse carries 1/(nx·ny).
 */
export class Fft2d {
  readonly nx: number;
  readonly ny: number;
  private readonly planX: FftPlan;
  private readonly planY: FftPlan;
  /** mirrorIndex[q] = index of the wavevector −k of entry q (Hermitian partner for real fields). */
  readonly mirrorIndex: Uint32Array;

  constructor(nx: number, ny: number) {
    this.nx = nx;
    this.ny = ny;
    this.planX = createFftPlan(nx);
    this.planY = ny === nx ? this.planX : createFftPlan(ny);
    this.mirrorIndex = new Uint32Array(nx * ny);
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) this.mirrorIndex[j * nx + i] = ((ny - j) % ny) * nx + ((nx - i) % nx);
    }
  }

  forward(re: Float64Array, im: Float64Array): void {
    this.transform(re, im, false);
  }

  inverse(re: Float64Array, im: Float64Array): void {
    this.transform(re, im, true);
    const s = 1 / (this.nx * this.ny);
    const size = this.nx * this.ny;
    for (let q = 0; q < size; q++) {
      re[q] = re[q]! * s;
      im[q] = im[q]! * s;
    }
  }

  /** Unnormalised transform in either direction (callers that fold the 1/(nx·ny) into their own loops use it). */
  transform(re: Float64Array, im: Float64Array, inverse: boolean): void {
    this.rows(re, im, inverse);
    this.columns(re, im, inverse, 0, this.nx);
  }

  /**
   * Unnormalised transform of band-limited data: only the x-wavenumber columns i < cut and i ≥ nx − cut + 1
   * (signed |m_x| < cut) are kept. Inverse: the input must vanish outside those columns (their column transforms
   * are skipped; the result is exact). Forward: only those output columns are computed (the others are left
   * holding partial sums and must not be read).
   */
  transformBand(re: Float64Array, im: Float64Array, inverse: boolean, cut: number): void {
    const { nx } = this;
    if (inverse) {
      this.columns(re, im, true, 0, cut);
      this.columns(re, im, true, nx - cut + 1, nx);
      this.rows(re, im, true);
    } else {
      this.rows(re, im, false);
      this.columns(re, im, false, 0, cut);
      this.columns(re, im, false, nx - cut + 1, nx);
    }
  }

  /**
   * All row transforms at once (inner loop over the rows, stride nx). Two consecutive radix-2 stages are fused into
   * one pass over memory (a radix-4 pass) with the same twiddles and the same arithmetic as fftStrided.
   */
  private rows(re: Float64Array, im: Float64Array, inverse: boolean): void {
    const { nx, ny } = this;
    const total = nx * ny;
    const { bitReverse, cos, sin } = this.planX;
    for (let i = 0; i < nx; i++) {
      const r = bitReverse[i]!;
      if (i < r) {
        for (let a = i, b = r; a < total; a += nx, b += nx) {
          const tr = re[a]!;
          re[a] = re[b]!;
          re[b] = tr;
          const ti = im[a]!;
          im[a] = im[b]!;
          im[b] = ti;
        }
      }
    }
    const sign = inverse ? 1 : -1;
    let size = 2;
    if (this.oddStages(nx)) {
      for (let start = 0; start < nx; start += 2) singleStage(re, im, start, start + 1, total, nx, cos[0]!, sign * sin[0]!);
      size = 4;
    }
    for (; size < nx; size <<= 2) {
      const h = size >>> 1;
      const step1 = nx / size;
      const step2 = step1 >>> 1;
      for (let start = 0; start < nx; start += 2 * size) {
        for (let k = 0; k < h; k++) {
          const a0 = start + k;
          fusedStages(
            re,
            im,
            a0,
            a0 + h,
            a0 + size,
            a0 + size + h,
            total,
            nx,
            cos[k * step1]!,
            sign * sin[k * step1]!,
            cos[k * step2]!,
            sign * sin[k * step2]!,
            cos[(k + h) * step2]!,
            sign * sin[(k + h) * step2]!,
          );
        }
      }
    }
  }

  /**
   * The column transforms of columns lo ≤ i < hi at once: inner loop contiguous over x; fused radix-2 stage pairs
   * as in rows().
   */
  private columns(re: Float64Array, im: Float64Array, inverse: boolean, lo: number, hi: number): void {
    if (hi <= lo) return;
    const { nx, ny } = this;
    const { bitReverse, cos, sin } = this.planY;
    for (let j = 0; j < ny; j++) {
      const r = bitReverse[j]!;
      if (j < r) {
        const a = j * nx;
        const b = r * nx;
        for (let i = lo; i < hi; i++) {
          const tr = re[a + i]!;
          re[a + i] = re[b + i]!;
          re[b + i] = tr;
          const ti = im[a + i]!;
          im[a + i] = im[b + i]!;
          im[b + i] = ti;
        }
      }
    }
    const sign = inverse ? 1 : -1;
    let size = 2;
    if (this.oddStages(ny)) {
      for (let start = 0; start < ny; start += 2) singleStage(re, im, start * nx + lo, (start + 1) * nx + lo, start * nx + hi, 1, cos[0]!, sign * sin[0]!);
      size = 4;
    }
    for (; size < ny; size <<= 2) {
      const h = size >>> 1;
      const step1 = ny / size;
      const step2 = step1 >>> 1;
      for (let start = 0; start < ny; start += 2 * size) {
        for (let k = 0; k < h; k++) {
          const a0 = (start + k) * nx + lo;
          fusedStages(
            re,
            im,
            a0,
            a0 + h * nx,
            a0 + size * nx,
            a0 + (size + h) * nx,
            a0 + (hi - lo),
            1,
            cos[k * step1]!,
            sign * sin[k * step1]!,
            cos[k * step2]!,
            sign * sin[k * step2]!,
            cos[(k + h) * step2]!,
            sign * sin[(k + h) * step2]!,
          );
        }
      }
    }
  }

  /** True when log2(n) is odd: one plain radix-2 stage precedes the fused pairs. */
  private oddStages(n: number): boolean {
    return Math.round(Math.log2(n)) % 2 === 1;
  }

  /**
   * Inverse-transform two real fields at once: given the spectra A and B of real fields, packs Z = A + iB, inverts
   * in place into (zr, zi), after which zr holds a and zi holds b.
   */
  inverseTwoReal(aRe: Float64Array, aIm: Float64Array, bRe: Float64Array, bIm: Float64Array, zr: Float64Array, zi: Float64Array): void {
    const size = this.nx * this.ny;
    for (let q = 0; q < size; q++) {
      zr[q] = aRe[q]! - bIm[q]!;
      zi[q] = aIm[q]! + bRe[q]!;
    }
    this.inverse(zr, zi);
  }

  /**
   * Forward-transform two real fields at once: zr holds a, zi holds b on entry (both are overwritten);
   * their spectra are written to (aRe, aIm) and (bRe, bIm) via A[k] = (Z[k] + Z̄[−k])/2, B[k] = (Z[k] − Z̄[−k])/(2i).
   */
  forwardTwoReal(zr: Float64Array, zi: Float64Array, aRe: Float64Array, aIm: Float64Array, bRe: Float64Array, bIm: Float64Array): void {
    this.forward(zr, zi);
    const size = this.nx * this.ny;
    const mirror = this.mirrorIndex;
    for (let q = 0; q < size; q++) {
      const m = mirror[q]!;
      const zR = zr[q]!;
      const zI = zi[q]!;
      const wR = zr[m]!;
      const wI = zi[m]!;
      aRe[q] = 0.5 * (zR + wR);
      aIm[q] = 0.5 * (zI - wI);
      bRe[q] = 0.5 * (zI + wI);
      bIm[q] = 0.5 * (wR - zR);
    }
  }
}

/**
 * One radix-2 butterfly (twiddle w) along a run: a = a0, a0 + step, … while a < end, each paired with a + (b0 − a0).
 * Used for the size-2 stage when the number of stages is odd.
 */
function singleStage(re: Float64Array, im: Float64Array, a0: number, b0: number, end: number, step: number, wr: number, wi: number): void {
  const delta = b0 - a0;
  for (let a = a0; a < end; a += step) butterfly(re, im, a, a + delta, wr, wi);
}

function butterfly(re: Float64Array, im: Float64Array, a: number, b: number, wr: number, wi: number): void {
  const br = re[b]!;
  const bi = im[b]!;
  const tr = wr * br - wi * bi;
  const ti = wr * bi + wi * br;
  const ar = re[a]!;
  const ai = im[a]!;
  re[b] = ar - tr;
  im[b] = ai - ti;
  re[a] = ar + tr;
  im[a] = ai + ti;
}

/**
 * Two consecutive radix-2 stages on the quadruple (p0, p1, p2, p3) = (a, a+h, a+s, a+s+h) of each run position:
 * stage s pairs (p0,p1) and (p2,p3) with twiddle w1; stage 2s pairs (p0,p2) with w2 and (p1,p3) with w3. The run
 * advances all four by `step` while p0 < end. Arithmetic is exactly that of the two separate stages.
 */
function fusedStages(
  re: Float64Array,
  im: Float64Array,
  p0: number,
  p1: number,
  p2: number,
  p3: number,
  end: number,
  step: number,
  w1r: number,
  w1i: number,
  w2r: number,
  w2i: number,
  w3r: number,
  w3i: number,
): void {
  const d1 = p1 - p0;
  const d2 = p2 - p0;
  const d3 = p3 - p0;
  for (let a = p0; a < end; a += step) {
    const b = a + d1;
    const c = a + d2;
    const d = a + d3;
    const x0r = re[a]!,
      x0i = im[a]!,
      x1r = re[b]!,
      x1i = im[b]!;
    const x2r = re[c]!,
      x2i = im[c]!,
      x3r = re[d]!,
      x3i = im[d]!;
    // Stage s.
    let tr = w1r * x1r - w1i * x1i;
    let ti = w1r * x1i + w1i * x1r;
    const y0r = x0r + tr,
      y0i = x0i + ti,
      y1r = x0r - tr,
      y1i = x0i - ti;
    tr = w1r * x3r - w1i * x3i;
    ti = w1r * x3i + w1i * x3r;
    const y2r = x2r + tr,
      y2i = x2i + ti,
      y3r = x2r - tr,
      y3i = x2i - ti;
    // Stage 2s.
    tr = w2r * y2r - w2i * y2i;
    ti = w2r * y2i + w2i * y2r;
    re[a] = y0r + tr;
    im[a] = y0i + ti;
    re[c] = y0r - tr;
    im[c] = y0i - ti;
    tr = w3r * y3r - w3i * y3i;
    ti = w3r * y3i + w3i * y3r;
    re[b] = y1r + tr;
    im[b] = y1i + ti;
    re[d] = y1r - tr;
    im[d] = y1i - ti;
  }
}
