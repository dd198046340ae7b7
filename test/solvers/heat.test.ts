import { describe, expect, it } from 'vitest';
import { heat } from '../../src/solvers/heat.js';
import { erf } from '../../src/numerics/special.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

// Independent references. Sine start: one Fourier mode, θ_c = A e^(−απ²t/L²) per dimension.
// Uniform start: method of images (odd 2L-periodic extension convolved with the free-space kernel), evaluated with
// erf — a different representation from the solver's Fourier series, and exact for every t.
function sineFactor(alpha: number, L: number, t: number): number {
  return Math.exp((-alpha * Math.PI * Math.PI * t) / (L * L));
}
function uniformFactorByImages(alpha: number, L: number, t: number): number {
  const s = 2 * Math.sqrt(alpha * t);
  const x = L / 2;
  let sum = 0;
  for (let j = -400; j <= 400; j++) {
    const sign = j % 2 === 0 ? 1 : -1;
    sum += sign * 0.5 * (erf(((j + 1) * L - x) / s) - erf((j * L - x) / s));
  }
  return sum;
}
function expectedExcess(raw: Record<string, unknown>): number {
  const i = heat.resolve(raw);
  const f = i.initial === 'sine' ? sineFactor(i.diffusivity_m2_s, i.length_m, i.t_end_s) : uniformFactorByImages(i.diffusivity_m2_s, i.length_m, i.t_end_s);
  return i.amplitude_K * Math.pow(f, i.mode === '1d' ? 1 : 2);
}

const cases: Record<string, unknown>[] = [
  {},
  { t_end_s: 40, amplitude_K: -120, boundary_K: 1000 },
  { length_m: 0.5, diffusivity_m2_s: 2e-5, t_end_s: 2000, nx: 201 },
  { initial: 'uniform' },
  { initial: 'uniform', t_end_s: 25, nx: 151 },
  { initial: 'uniform', length_m: 1, diffusivity_m2_s: 1e-3, t_end_s: 60, amplitude_K: 400 },
  { mode: '2d' },
  { mode: '2d', t_end_s: 4, amplitude_K: -30, boundary_K: 77 },
  { mode: '2d', length_m: 1, diffusivity_m2_s: 1e-3, t_end_s: 50, nx: 41 },
  { mode: '2d', initial: 'uniform' },
  { mode: '2d', initial: 'uniform', length_m: 1, diffusivity_m2_s: 1e-3, t_end_s: 50, nx: 41, amplitude_K: -200 },
  { mode: '2d', initial: 'uniform', t_end_s: 3, nx: 61 },
];

describe('heat', () => {
  for (const raw of cases) {
    it(`matches the analytic centre temperature: ${JSON.stringify(raw)}`, () => {
      const inputs = heat.resolve(raw);
      const out = heat.run(inputs);
      const expected = expectedExcess(raw);
      expect(out.check.passed).toBe(true);
      expect(out.check.rel_error).toBeLessThan(1e-5);
      // The solver's series reference agrees with the independent formula.
      expect(Math.abs(out.check.reference - expected) / Math.abs(expected)).toBeLessThan(1e-12);
      expect(Math.abs(out.value - inputs.boundary_K - expected) / Math.abs(expected)).toBeLessThan(1e-5);
      expect(out.check.computed).toBe(out.outputs.excess_K);
      expect(out.unit).toBe('K');
      expect(out.mode).toBe(inputs.mode);
      expect(out.rule8_array).toBe('temperature');
      const temp = out.outputs.temperature as Record<string, unknown>;
      if (inputs.mode === '1d') {
        expect(out.output_class).toBe('profile');
        const T = temp.T_K as number[];
        const x = temp.x_m as number[];
        expect(T.length).toBeLessThanOrEqual(512);
        expect(x.length).toBe(T.length);
        expect(x[0]).toBe(0);
        expect(x[x.length - 1]).toBeCloseTo(inputs.length_m, 12);
        expect(out.rule8).toEqual(T);
      } else {
        expect(out.output_class).toBe('field');
        const T = temp.T_K as number[][];
        expect(T.length).toBeLessThanOrEqual(64);
        expect(T[0]!.length).toBeLessThanOrEqual(64);
        expect(typeof temp.dx_m).toBe('number');
        expect((temp.x_m as number[]).length).toBe(T[0]!.length);
        expect(out.rule8).toEqual(T);
      }
    });
  }

  it('defaults resolve and echo every key', () => {
    expect(heat.resolve({})).toEqual({
      mode: '1d',
      length_m: 0.1,
      diffusivity_m2_s: 1.11e-4,
      t_end_s: 10,
      boundary_K: 300,
      amplitude_K: 50,
      initial: 'sine',
      nx: 101,
      fourier_number: 1 / 6,
    });
    expect(heat.resolve({ mode: '2d' }).nx).toBe(51);
  });

  it('default value is the closed form 300 + 50 e^(−απ²t/L²)', () => {
    const out = heat.run(heat.resolve({}));
    expect(out.value).toBeCloseTo(300 + 50 * Math.exp((-1.11e-4 * Math.PI ** 2 * 10) / 0.01), 6);
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ colour: 'red' }, 'colour'],
    [{ length_m: 'long' }, 'length_m'],
    [{ mode: '3d' }, 'mode'],
    [{ length_m: 20 }, 'length_m'],
    [{ diffusivity_m2_s: 1 }, 'diffusivity_m2_s'],
    [{ t_end_s: 0 }, 't_end_s'],
    [{ amplitude_K: 0 }, 'amplitude_K'],
    [{ amplitude_K: 2000 }, 'amplitude_K'],
    [{ nx: 100 }, 'nx'],
    [{ nx: 9 }, 'nx'],
    [{ mode: '2d', nx: 301 }, 'nx'],
    [{ fourier_number: 0.6 }, 'fourier_number'],
    [{ initial: 'gaussian' }, 'initial'],
    [{ t_end_s: 1e6 }, 't_end_s'],
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => heat.resolve(raw), field, { status: 400 });
    });
  }

  it('amplitude_K has a magnitude floor of 1 µK: the corners match A e^(−απ²t/L²), a subnormal amplitude is a 400', () => {
    // Old code: "≠ 0" let 5e-324 K through; the run refused it as "decayed below double precision: lower t_end_s".
    for (const A of [1e-6, -1e-6, 1000, -1000]) {
      // A boundary at 1000 K keeps the coldest point at or above 0 K.
      const out = heat.run(heat.resolve({ amplitude_K: A, boundary_K: 1000 }));
      expect(out.check.passed).toBe(true);
      const excess = expectedExcess({ amplitude_K: A, boundary_K: 1000 });
      expect(Math.abs((out.outputs.excess_K as number) - excess) / Math.abs(excess)).toBeLessThan(1e-6);
    }
    for (const A of [5e-324, -5e-324, 1e-300, 9e-7])
      expectInputError(() => heat.resolve({ amplitude_K: A }), 'amplitude_K', { status: 400, reason: 'magnitude must be 1e-6 … 1000 K (either sign)' });
  });

  it('refuses a profile colder than 0 K: boundary_K + amplitude_K ≥ 0, and seals one that reaches 0 K exactly', () => {
    for (const raw of [
      { boundary_K: 0, amplitude_K: -50 },
      { boundary_K: 10, amplitude_K: -1000, initial: 'uniform' },
      { mode: '2d', boundary_K: 40, amplitude_K: -41 },
    ])
      expectInputError(() => heat.resolve(raw), 'amplitude_K', { status: 400, reason: /below 0 K/ });
    const out = heat.run(heat.resolve({ boundary_K: 50, amplitude_K: -50, t_end_s: 1 }));
    expect(out.check.passed).toBe(true);
    // The centre warms back towards the boundary: A e^(−απ²t/L²) below 50 K, never below 0 K.
    expect(out.value).toBeGreaterThan(0);
    expect(out.value).toBeLessThan(50);
  });

  it('is deterministic', () => {
    for (const raw of [{}, { mode: '2d', initial: 'uniform' }]) {
      const a = heat.run(heat.resolve(raw));
      const b = heat.run(heat.resolve(raw));
      expect(Object.is(a.value, b.value)).toBe(true);
      expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    }
  });

  it('a result perturbed by 1 % fails the gate', () => {
    for (const raw of [{}, { mode: '2d', initial: 'uniform' }]) expectGateRefusesPerturbed(heat.run(heat.resolve(raw)));
  });
});
