// Rule 8: the field-dependent equation terms, computed from a solver's field, spectrum or profile, and null
// for scalar results. The definitions (also in docs/decisions.md):
//   φ = samples / max|samples| on a unit domain (spacing h = 1/(n−1) per axis), so terms are dimensionless.
//   Master field equation  □φ + μ²φ + λφ³ + Γφ + κ·R_t·φ = T  with μ² = 1, λ = 1, κ = a = 1e-3,
//   Γ = k_d² the squared wavenumber of the dominant non-constant spectral mode; for a static snapshot □φ = −∇²φ.
//   Each term is reported as its RMS over the interior samples; T (the source) is the pointwise sum, so the
//   six terms are consistent with each other. masterSum.total = RMS(T).
//   Spectral propagator: DFT power P_k of φ over the first modes (per axis for fields, summed over the other),
//   G_k = 1/(k² + μ²), and the propagated sum Σ P_k G_k / Σ P_k.
//   Functional equation E = P_φ · Z(M, R, δ, C, X) with P_φ = ⟨φ²⟩, M = masterSum.total, R = R_t,
//   δ = precision bound 1e-4, C = share of spectral power in the dominant mode, X = spectral centroid k̄:
//   Z = M · R · C · (1 − δ) / (1 + X).
import { MODULATION_AMPLITUDE, PRECISION_BOUND } from './modulation.js';

const MU2 = 1;
const LAMBDA = 1;
const MAX_MODES = 16;

export interface MasterTerms {
  terms: { name: string; symbol: string; value: number }[];
  total: number;
  unit: '1';
}

export interface FieldTerms {
  master_equation: { equation: string; masterSum: MasterTerms };
  functional_equation: { equation: string; P_phi: number; Z: number; M: number; R: number; delta: number; C: number; X: number; E: number };
  spectral_propagator: { k: number[]; power: number[]; propagator: number[]; propagated: number };
}

function normalise(samples: number[] | number[][]): number[][] {
  const rows: number[][] = Array.isArray(samples[0]) ? (samples as number[][]) : [samples as number[]];
  let max = 0;
  for (const r of rows) for (const v of r) if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
  const scale = max > 0 ? 1 / max : 0;
  return rows.map((r) => r.map((v) => (Number.isFinite(v) ? v * scale : 0)));
}

/** DFT power of a real sequence for modes 0 … m−1. */
function dftPower(seq: number[], modes: number): number[] {
  const n = seq.length;
  const out = new Array<number>(modes).fill(0);
  for (let k = 0; k < modes; k++) {
    let re = 0;
    let im = 0;
    for (let j = 0; j < n; j++) {
      const ang = (-2 * Math.PI * k * j) / n;
      re += seq[j]! * Math.cos(ang);
      im += seq[j]! * Math.sin(ang);
    }
    out[k] = (re * re + im * im) / (n * n);
  }
  return out;
}

function spectrum(phi: number[][]): number[] {
  const ny = phi.length;
  const nx = phi[0]!.length;
  const modesX = Math.min(MAX_MODES, Math.max(1, Math.floor(nx / 2)));
  const power = new Array<number>(modesX).fill(0);
  for (const row of phi) dftPower(row, modesX).forEach((p, k) => (power[k]! += p / ny));
  if (ny > 1) {
    const modesY = Math.min(modesX, Math.floor(ny / 2));
    for (let c = 0; c < nx; c++) {
      const col = phi.map((r) => r[c]!);
      dftPower(col, modesY).forEach((p, k) => (power[k]! += p / nx));
    }
  }
  return power;
}

function rms(values: number[]): number {
  if (values.length === 0) return 0;
  let s = 0;
  for (const v of values) s += v * v;
  return Math.sqrt(s / values.length);
}

export function fieldTerms(samples: number[] | number[][], R_t: number): FieldTerms {
  const phi = normalise(samples);
  const ny = phi.length;
  const nx = phi[0]?.length ?? 0;
  const hx = nx > 1 ? 1 / (nx - 1) : 1;
  const hy = ny > 1 ? 1 / (ny - 1) : 1;
  const power = spectrum(phi);
  // Wavenumbers on the unit domain: mode k has 2πk.
  const k = power.map((_, i) => 2 * Math.PI * i);
  let dominant = power.length > 1 ? 1 : 0;
  for (let i = 1; i < power.length; i++) if (power[i]! > power[dominant]!) dominant = i;
  const gamma = k[dominant]! ** 2;
  const kappa = MODULATION_AMPLITUDE;

  const box: number[] = [];
  const mass: number[] = [];
  const cubic: number[] = [];
  const decay: number[] = [];
  const ko42: number[] = [];
  const source: number[] = [];
  for (let y = 0; y < ny; y++) {
    for (let x = 0; x < nx; x++) {
      const interiorX = nx < 3 || (x > 0 && x < nx - 1);
      const interiorY = ny < 3 || (y > 0 && y < ny - 1);
      if (!interiorX || !interiorY) continue;
      const v = phi[y]![x]!;
      let lap = 0;
      if (nx >= 3) lap += (phi[y]![x - 1]! - 2 * v + phi[y]![x + 1]!) / (hx * hx);
      if (ny >= 3) lap += (phi[y - 1]![x]! - 2 * v + phi[y + 1]![x]!) / (hy * hy);
      const b = -lap;
      const m = MU2 * v;
      const c = LAMBDA * v * v * v;
      const d = gamma * v;
      const q = kappa * R_t * v;
      box.push(b);
      mass.push(m);
      cubic.push(c);
      decay.push(d);
      ko42.push(q);
      source.push(b + m + c + d + q);
    }
  }
  const total = rms(source);
  const masterSum: MasterTerms = {
    terms: [
      { name: 'dalembertian', symbol: '□φ', value: rms(box) },
      { name: 'mass', symbol: 'μ²φ', value: rms(mass) },
      { name: 'self_interaction', symbol: 'λφ³', value: rms(cubic) },
      { name: 'decay', symbol: 'Γφ', value: rms(decay) },
      { name: 'ko42_coupling', symbol: 'κR(t)φ', value: rms(ko42) },
      { name: 'source', symbol: 'T', value: total },
    ],
    total,
    unit: '1',
  };

  const totalPower = power.reduce((s, p) => s + p, 0);
  const propagator = k.map((kk) => 1 / (kk * kk + MU2));
  const propagated = totalPower > 0 ? power.reduce((s, p, i) => s + p * propagator[i]!, 0) / totalPower : 0;
  let pPhi = 0;
  for (const r of phi) for (const v of r) pPhi += v * v;
  pPhi /= Math.max(1, nx * ny);
  const C = totalPower > 0 ? power[dominant]! / totalPower : 0;
  const X = totalPower > 0 ? power.reduce((s, p, i) => s + p * i, 0) / totalPower : 0;
  const delta = PRECISION_BOUND;
  const Z = (total * R_t * C * (1 - delta)) / (1 + X);
  return {
    master_equation: { equation: '□φ + μ²φ + λφ³ + Γφ + κR(t)φ = T', masterSum },
    functional_equation: { equation: 'E = P_φ · Z(M, R, δ, C, X)', P_phi: pPhi, Z, M: total, R: R_t, delta, C, X, E: pPhi * Z },
    spectral_propagator: { k, power, propagator, propagated },
  };
}
