// Ordinary differential equation integrators for small systems: the classical fixed-step RK4 that several
// solvers step with, and an adaptive Dormand–Prince 5(4) integrator used as an independent reference.
// Both work in place on Float64Arrays with scratch buffers allocated once per integrator.

/** dy/dt = f(t, y), written into dydt. Must not keep references to y or dydt. */
export type OdeRhs = (t: number, y: Float64Array, dydt: Float64Array) => void;

/** Classical fourth-order Runge–Kutta, one fixed step at a time, no allocation per step. */
export class Rk4Stepper {
  private readonly k1: Float64Array;
  private readonly k2: Float64Array;
  private readonly k3: Float64Array;
  private readonly k4: Float64Array;
  private readonly tmp: Float64Array;

  constructor(
    readonly dim: number,
    private readonly rhs: OdeRhs,
  ) {
    this.k1 = new Float64Array(dim);
    this.k2 = new Float64Array(dim);
    this.k3 = new Float64Array(dim);
    this.k4 = new Float64Array(dim);
    this.tmp = new Float64Array(dim);
  }

  /** Advance y (in place) from t to t + h. */
  step(t: number, y: Float64Array, h: number): void {
    const { dim, k1, k2, k3, k4, tmp, rhs } = this;
    const half = 0.5 * h;
    rhs(t, y, k1);
    for (let i = 0; i < dim; i++) tmp[i] = y[i]! + half * k1[i]!;
    rhs(t + half, tmp, k2);
    for (let i = 0; i < dim; i++) tmp[i] = y[i]! + half * k2[i]!;
    rhs(t + half, tmp, k3);
    for (let i = 0; i < dim; i++) tmp[i] = y[i]! + h * k3[i]!;
    rhs(t + h, tmp, k4);
    const sixth = h / 6;
    for (let i = 0; i < dim; i++) y[i] = y[i]! + sixth * (k1[i]! + 2 * k2[i]! + 2 * k3[i]! + k4[i]!);
  }
}

export interface DormandPrinceOptions {
  rtol: number;
  atol: number;
  /** First trial step; estimated from the initial derivative when omitted. */
  initialStep?: number;
  /** Accepted + rejected steps before giving up. */
  maxSteps?: number;
}

export interface DormandPrinceResult {
  y: Float64Array;
  acceptedSteps: number;
  rejectedSteps: number;
}

// Dormand & Prince (1980) RK5(4)7M tableau; the 5th-order solution propagates (local extrapolation, FSAL).
const A21 = 1 / 5;
const A31 = 3 / 40,
  A32 = 9 / 40;
const A41 = 44 / 45,
  A42 = -56 / 15,
  A43 = 32 / 9;
const A51 = 19372 / 6561,
  A52 = -25360 / 2187,
  A53 = 64448 / 6561,
  A54 = -212 / 729;
const A61 = 9017 / 3168,
  A62 = -355 / 33,
  A63 = 46732 / 5247,
  A64 = 49 / 176,
  A65 = -5103 / 18656;
const B1 = 35 / 384,
  B3 = 500 / 1113,
  B4 = 125 / 192,
  B5 = -2187 / 6784,
  B6 = 11 / 84;
// Error coefficients: b (5th order) − b* (4th order).
const E1 = 71 / 57600,
  E3 = -71 / 16695,
  E4 = 71 / 1920,
  E5 = -17253 / 339200,
  E6 = 22 / 525,
  E7 = -1 / 40;
const C2 = 1 / 5,
  C3 = 3 / 10,
  C4 = 4 / 5,
  C5 = 8 / 9;

/**
 * Integrate y' = f(t, y) from t0 to t1 (t1 > t0) with the adaptive Dormand–Prince 5(4) pair, error control
 * per component with scale atol + rtol·max(|y_old|, |y_new|) in the RMS norm, standard (non-PI) step control
 * (safety 0.9, factor limits 0.2 … 10). The last step is shortened to land exactly on t1.
 */
export function dormandPrince45(rhs: OdeRhs, t0: number, y0: ArrayLike<number>, t1: number, opts: DormandPrinceOptions): DormandPrinceResult {
  const n = y0.length;
  const { rtol, atol } = opts;
  const maxSteps = opts.maxSteps ?? 10_000_000;
  const y = Float64Array.from(y0);
  const yNew = new Float64Array(n);
  const tmp = new Float64Array(n);
  const k1 = new Float64Array(n);
  const k2 = new Float64Array(n);
  const k3 = new Float64Array(n);
  const k4 = new Float64Array(n);
  const k5 = new Float64Array(n);
  const k6 = new Float64Array(n);
  const k7 = new Float64Array(n);

  const span = t1 - t0;
  if (!(span > 0)) return { y, acceptedSteps: 0, rejectedSteps: 0 };
  rhs(t0, y, k1);

  let h = opts.initialStep ?? initialStepEstimate(y, k1, rtol, atol, span);
  let t = t0;
  let accepted = 0;
  let rejected = 0;
  while (t < t1) {
    if (accepted + rejected >= maxSteps) throw new Error(`dormandPrince45: step budget ${maxSteps} exhausted at t=${t}`);
    let last = false;
    if (t + h >= t1) {
      h = t1 - t;
      last = true;
    }
    for (let i = 0; i < n; i++) tmp[i] = y[i]! + h * A21 * k1[i]!;
    rhs(t + C2 * h, tmp, k2);
    for (let i = 0; i < n; i++) tmp[i] = y[i]! + h * (A31 * k1[i]! + A32 * k2[i]!);
    rhs(t + C3 * h, tmp, k3);
    for (let i = 0; i < n; i++) tmp[i] = y[i]! + h * (A41 * k1[i]! + A42 * k2[i]! + A43 * k3[i]!);
    rhs(t + C4 * h, tmp, k4);
    for (let i = 0; i < n; i++) tmp[i] = y[i]! + h * (A51 * k1[i]! + A52 * k2[i]! + A53 * k3[i]! + A54 * k4[i]!);
    rhs(t + C5 * h, tmp, k5);
    for (let i = 0; i < n; i++) {
      tmp[i] = y[i]! + h * (A61 * k1[i]! + A62 * k2[i]! + A63 * k3[i]! + A64 * k4[i]! + A65 * k5[i]!);
    }
    rhs(t + h, tmp, k6);
    for (let i = 0; i < n; i++) {
      yNew[i] = y[i]! + h * (B1 * k1[i]! + B3 * k3[i]! + B4 * k4[i]! + B5 * k5[i]! + B6 * k6[i]!);
    }
    const tNew = last ? t1 : t + h;
    rhs(tNew, yNew, k7);
    let errSq = 0;
    for (let i = 0; i < n; i++) {
      const e = h * (E1 * k1[i]! + E3 * k3[i]! + E4 * k4[i]! + E5 * k5[i]! + E6 * k6[i]! + E7 * k7[i]!);
      const scale = atol + rtol * Math.max(Math.abs(y[i]!), Math.abs(yNew[i]!));
      errSq += (e / scale) * (e / scale);
    }
    const err = Math.sqrt(errSq / n);
    if (err <= 1) {
      accepted++;
      t = tNew;
      y.set(yNew);
      k1.set(k7);
      const factor = err === 0 ? 10 : Math.min(10, Math.max(0.2, 0.9 * Math.pow(err, -0.2)));
      if (!last) h *= factor;
    } else {
      rejected++;
      h *= Math.max(0.2, 0.9 * Math.pow(err, -0.2));
      if (!(h > 0) || t + h === t) throw new Error(`dormandPrince45: step size underflow at t=${t}`);
    }
  }
  return { y, acceptedSteps: accepted, rejectedSteps: rejected };
}

/** Hairer–Wanner style first step: h ≈ 0.01 · ‖y‖/‖f‖ in the error-scaled norm, capped by the span. */
function initialStepEstimate(y: Float64Array, f: Float64Array, rtol: number, atol: number, span: number): number {
  let d0 = 0;
  let d1 = 0;
  for (let i = 0; i < y.length; i++) {
    const scale = atol + rtol * Math.abs(y[i]!);
    d0 += (y[i]! / scale) ** 2;
    d1 += (f[i]! / scale) ** 2;
  }
  d0 = Math.sqrt(d0 / y.length);
  d1 = Math.sqrt(d1 / y.length);
  const h = d0 < 1e-5 || d1 < 1e-5 ? 1e-6 * span : (0.01 * d0) / d1;
  return Math.min(h, span);
}

/**
 * Records a run of unknown length with bounded memory: every stride-th step is kept; when the buffer is full,
 * every other kept sample is dropped and the stride doubles, so the kept samples stay uniformly spaced in step
 * index. `finish` appends the final step if it was not kept. Deterministic: depends only on the step count.
 */
export class DecimatingRecorder {
  readonly t: number[] = [];
  readonly channels: number[][];
  private stride = 1;
  private lastIndex = -1;

  constructor(
    channelCount: number,
    private readonly capacity = 8192,
  ) {
    this.channels = Array.from({ length: channelCount }, () => []);
  }

  /** Offer step `index` (0, 1, 2, … in order) with its time and channel values. */
  offer(index: number, t: number, values: ArrayLike<number>): void {
    if (index % this.stride !== 0) return;
    if (this.t.length >= this.capacity) {
      this.compact();
      if (index % this.stride !== 0) return;
    }
    this.push(index, t, values);
  }

  /** Make sure the last step is present. */
  finish(index: number, t: number, values: ArrayLike<number>): void {
    if (this.lastIndex !== index) this.push(index, t, values);
  }

  private push(index: number, t: number, values: ArrayLike<number>): void {
    this.t.push(t);
    for (let c = 0; c < this.channels.length; c++) this.channels[c]!.push(values[c]!);
    this.lastIndex = index;
  }

  private compact(): void {
    const keepEven = (a: number[]) => {
      let w = 0;
      for (let r = 0; r < a.length; r += 2) a[w++] = a[r]!;
      a.length = w;
    };
    keepEven(this.t);
    for (const c of this.channels) keepEven(c);
    this.stride *= 2;
  }
}
