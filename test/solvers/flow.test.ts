import { describe, expect, it } from 'vitest';
import { flow } from '../../src/solvers/flow.js';
import { Fft2d, createFftPlan, fft, fftIndices, ifft } from '../../src/numerics/fft.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

describe('radix-2 FFT (src/numerics/fft.ts)', () => {
  it('band-limited 2-D transforms agree with the full ones', () => {
    const nx = 32,
      ny = 16,
      cut = 11;
    const f = new Fft2d(nx, ny);
    const idx = fftIndices(nx);
    const sr = new Float64Array(nx * ny),
      si = new Float64Array(nx * ny);
    for (let j = 0; j < ny; j++)
      for (let i = 0; i < nx; i++) {
        if (Math.abs(idx[i]!) >= cut) continue;
        sr[j * nx + i] = Math.cos(0.37 * i + 1.1 * j);
        si[j * nx + i] = Math.sin(0.91 * i - 0.2 * j);
      }
    const fullR = Float64Array.from(sr),
      fullI = Float64Array.from(si);
    f.transform(fullR, fullI, true);
    const bandR = Float64Array.from(sr),
      bandI = Float64Array.from(si);
    f.transformBand(bandR, bandI, true, cut);
    for (let q = 0; q < nx * ny; q++) {
      expect(bandR[q]).toBeCloseTo(fullR[q]!, 11);
      expect(bandI[q]).toBeCloseTo(fullI[q]!, 11);
    }
    const fwdR = Float64Array.from(fullR),
      fwdI = Float64Array.from(fullI);
    f.transform(fwdR, fwdI, false);
    const fwdBandR = Float64Array.from(fullR),
      fwdBandI = Float64Array.from(fullI);
    f.transformBand(fwdBandR, fwdBandI, false, cut);
    for (let j = 0; j < ny; j++)
      for (let i = 0; i < nx; i++) {
        if (Math.abs(idx[i]!) >= cut) continue;
        expect(fwdBandR[j * nx + i]).toBeCloseTo(fwdR[j * nx + i]!, 9);
        expect(fwdBandI[j * nx + i]).toBeCloseTo(fwdI[j * nx + i]!, 9);
      }
  });

  it('matches a direct DFT and inverts', () => {
    for (const n of [1, 2, 8, 64]) {
      const re = new Float64Array(n),
        im = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        re[j] = Math.cos(1.3 * j * j + 0.2);
        im[j] = Math.sin(0.7 * j + 1);
      }
      const x = Float64Array.from(re),
        y = Float64Array.from(im);
      fft(re, im, createFftPlan(n));
      for (let k = 0; k < n; k++) {
        let sr = 0,
          si = 0;
        for (let j = 0; j < n; j++) {
          const a = (-2 * Math.PI * j * k) / n;
          sr += x[j]! * Math.cos(a) - y[j]! * Math.sin(a);
          si += x[j]! * Math.sin(a) + y[j]! * Math.cos(a);
        }
        expect(re[k]).toBeCloseTo(sr, 10);
        expect(im[k]).toBeCloseTo(si, 10);
      }
      ifft(re, im);
      for (let j = 0; j < n; j++) {
        expect(re[j]).toBeCloseTo(x[j]!, 12);
        expect(im[j]).toBeCloseTo(y[j]!, 12);
      }
    }
    expect(() => createFftPlan(12)).toThrow(RangeError);
    expect(Array.from(fftIndices(8))).toEqual([0, 1, 2, 3, -4, -3, -2, -1]);
  });

  it('2-D transform of a plane wave is one spike; two-real packing splits correctly', () => {
    const nx = 16,
      ny = 8;
    const f = new Fft2d(nx, ny);
    const re = new Float64Array(nx * ny),
      im = new Float64Array(nx * ny);
    const b = new Float64Array(nx * ny);
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        re[j * nx + i] = Math.cos(2 * Math.PI * ((3 * i) / nx + (2 * j) / ny));
        b[j * nx + i] = Math.sin(2 * Math.PI * ((1 * i) / nx - (1 * j) / ny)) + 0.5;
      }
    }
    const a = Float64Array.from(re);
    f.forward(re, im);
    // cos → N/2 at (3, 2) and at (−3, −2).
    expect(re[2 * nx + 3]).toBeCloseTo((nx * ny) / 2, 10);
    expect(re[(ny - 2) * nx + (nx - 3)]).toBeCloseTo((nx * ny) / 2, 10);
    let other = 0;
    for (let q = 0; q < nx * ny; q++) if (q !== 2 * nx + 3 && q !== (ny - 2) * nx + (nx - 3)) other = Math.max(other, Math.hypot(re[q]!, im[q]!));
    expect(other).toBeLessThan(1e-12);
    // forwardTwoReal(a, b) gives the same spectra as separate transforms; inverseTwoReal recovers a and b.
    const sizes = nx * ny;
    const aRe = new Float64Array(sizes),
      aIm = new Float64Array(sizes),
      bRe = new Float64Array(sizes),
      bIm = new Float64Array(sizes);
    f.forwardTwoReal(Float64Array.from(a), Float64Array.from(b), aRe, aIm, bRe, bIm);
    const br = Float64Array.from(b),
      bi = new Float64Array(sizes);
    f.forward(br, bi);
    for (let q = 0; q < sizes; q++) {
      expect(aRe[q]).toBeCloseTo(re[q]!, 10);
      expect(aIm[q]).toBeCloseTo(im[q]!, 10);
      expect(bRe[q]).toBeCloseTo(br[q]!, 10);
      expect(bIm[q]).toBeCloseTo(bi[q]!, 10);
    }
    const zr = new Float64Array(sizes),
      zi = new Float64Array(sizes);
    f.inverseTwoReal(aRe, aIm, bRe, bIm, zr, zi);
    for (let q = 0; q < sizes; q++) {
      expect(zr[q]).toBeCloseTo(a[q]!, 12);
      expect(zi[q]).toBeCloseTo(b[q]!, 12);
    }
  });
});

// Taylor–Green is an exact Navier–Stokes solution: amplitude U0 e^(−2νk²t), k = 2π·wavenumber/L.
function taylorGreen(raw: Record<string, unknown>): number {
  const i = flow.resolve(raw);
  const k = (2 * Math.PI * i.wavenumber) / i.length_m;
  return i.velocity_m_s * Math.exp(-2 * i.viscosity_m2_s * k * k * i.t_end_s);
}

const cases: Record<string, unknown>[] = [
  {},
  { n: 64, wavenumber: 4, viscosity_m2_s: 0.002, t_end_s: 0.5 },
  { n: 16, wavenumber: 2, cfl: 1, length_m: 10, velocity_m_s: 3, viscosity_m2_s: 0.5, t_end_s: 5 },
  { length_m: 0.01, velocity_m_s: 0.02, viscosity_m2_s: 1e-6, t_end_s: 1 },
];

describe('flow', () => {
  for (const raw of cases) {
    it(`follows the Taylor–Green decay: ${JSON.stringify(raw)}`, () => {
      const inputs = flow.resolve(raw);
      const out = flow.run(inputs);
      const expected = taylorGreen(raw);
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.check.reference - expected)).toBeLessThanOrEqual(1e-14 * expected);
      expect(Math.abs(out.value - expected) / expected).toBeLessThan(1e-4);
      expect(out.unit).toBe('m/s');
      expect(out.mode).toBeNull();
      expect(out.output_class).toBe('field');
      expect(out.rule8_array).toBe('vorticity');
      const w = out.outputs.vorticity as { omega_1_s: number[][]; x_m: number[]; dx_m: number };
      expect(w.omega_1_s.length).toBe(Math.min(inputs.n, 64));
      expect(w.omega_1_s[0]!.length).toBe(w.x_m.length);
      expect(out.rule8).toEqual(w.omega_1_s);
      // Energy per unit mass of the vortex: ½⟨u²+v²⟩ = U²/4.
      expect(Math.abs((out.outputs.kinetic_energy_J_per_kg as number) / ((expected * expected) / 4) - 1)).toBeLessThan(2e-4);
      expect(out.outputs.reynolds_number).toBeCloseTo((inputs.velocity_m_s * inputs.length_m) / inputs.viscosity_m2_s, 8);
      expect(out.outputs.max_divergence as number).toBeLessThan(1e-9 * ((2 * Math.PI * inputs.wavenumber) / inputs.length_m) * inputs.velocity_m_s);
      // The vorticity field is 2Uk sin kx sin ky: its peak is 2Uk.
      let peak = 0;
      for (const row of w.omega_1_s) for (const x of row) peak = Math.max(peak, Math.abs(x));
      expect(peak).toBeLessThanOrEqual(2 * out.value * ((2 * Math.PI * inputs.wavenumber) / inputs.length_m) * (1 + 1e-9));
    });
  }

  it('defaults resolve', () => {
    expect(flow.resolve({})).toEqual({ length_m: 1, velocity_m_s: 1, viscosity_m2_s: 0.01, t_end_s: 1, n: 32, cfl: 0.5, wavenumber: 1 });
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ reynolds: 100 }, 'reynolds'],
    [{ n: '32' }, 'n'],
    [{ n: 48 }, 'n'],
    [{ length_m: 1e4 }, 'length_m'],
    [{ viscosity_m2_s: 0 }, 'viscosity_m2_s'],
    [{ t_end_s: -1 }, 't_end_s'],
    [{ cfl: 2 }, 'cfl'],
    [{ wavenumber: 5 }, 'wavenumber'],
    [{ wavenumber: 1.5 }, 'wavenumber'],
    [{ n: 128, t_end_s: 1000 }, 't_end_s'],
    [{ n: 128, t_end_s: 0.4 }, 't_end_s'], // 1.06e7 > 8e6: the largest allowed run stays under 5 s (1e8 took 49–56 s here)
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => flow.resolve(raw), field);
    });
  }

  it('is deterministic', () => {
    const a = flow.run(flow.resolve({}));
    const b = flow.run(flow.resolve({}));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a result perturbed by 1 % fails the gate', () => {
    expectGateRefusesPerturbed(flow.run(flow.resolve({})));
  });
});
