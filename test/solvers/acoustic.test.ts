import { describe, expect, it } from 'vitest';
import { acoustic } from '../../src/solvers/acoustic.js';
import { bisect } from '../../src/numerics/roots.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

// Cone closed at the narrow end, open at the wide end, written in apex distance ξ: p = sin(kξ + φ)/ξ;
// the n-th root of x1·k·cos(kL) + sin(kL) = 0 lies in ((n − ½)π/L, nπ/L) — bisection there.
function coneClosedOpen(c: number, L: number, rs: number, rl: number, n: number): number {
  const x1 = (L * rs) / (rl - rs);
  const g = (k: number) => x1 * k * Math.cos(k * L) + Math.sin(k * L);
  const k = bisect(g, ((n - 0.5) * Math.PI) / L, (n * Math.PI) / L, 1e-15);
  return (c * k) / (2 * Math.PI);
}

const cases: [Record<string, unknown>, number, number][] = [
  [{}, 343 / (4 * 0.5), 1e-6],
  [{ mode: 5 }, (9 * 343) / 2, 2e-5],
  [{ length_m: 2, sound_speed_m_s: 1480, mode: 3, cells: 3000 }, (5 * 1480) / 8, 2e-6],
  [{ ends: 'open-open', mode: 3 }, (3 * 343) / 1, 1e-5],
  [{ ends: 'closed-closed', mode: 2 }, (2 * 343) / 1, 1e-5],
  [{ shape: 'cone' }, coneClosedOpen(343, 0.5, 0.002, 0.03, 1), 1e-6],
  [{ shape: 'cone', mode: 4, length_m: 1.2, radius_small_m: 0.01, radius_large_m: 0.05 }, coneClosedOpen(343, 1.2, 0.01, 0.05, 4), 2e-5],
  [{ shape: 'cone', ends: 'open-open', mode: 2 }, (2 * 343) / 1, 1e-5],
];

describe('acoustic', () => {
  for (const [raw, expected, tol] of cases) {
    it(`matches the closed form: ${JSON.stringify(raw)}`, () => {
      const inputs = acoustic.resolve(raw);
      const out = acoustic.run(inputs);
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.check.reference - expected) / expected).toBeLessThan(1e-10);
      expect(Math.abs(out.value - expected) / expected).toBeLessThan(tol);
      expect(out.check.computed).toBe(out.value);
      expect(out.unit).toBe('Hz');
      expect(out.output_class).toBe('spectrum');
      expect(out.rule8_array).toBe('resonances');
      const res = out.outputs.resonances as number[];
      expect(res.length).toBe(10);
      expect(out.rule8).toEqual(res);
      if (inputs.mode <= 10) expect(res[inputs.mode - 1]).toBe(out.value);
      const p = out.outputs.pressure_mode as number[];
      const x = out.outputs.x_m as number[];
      expect(p.length).toBeLessThanOrEqual(512);
      expect(x.length).toBe(p.length);
      expect(x[0]).toBe(0);
      expect(x[x.length - 1]).toBeCloseTo(inputs.length_m, 12);
      expect(Math.max(...p.map(Math.abs))).toBeLessThanOrEqual(1);
      if (inputs.ends !== 'closed-closed') expect(p[p.length - 1]).toBe(0); // open wide end
      if (inputs.ends === 'open-open') expect(p[0]).toBe(0);
    });
  }

  it('the lumped FV cylinder spectrum equals its exact discrete eigenvalues (2/h) sin(kh/2)', () => {
    // closed-open, uniform S: p_i = cos(k x_i) with k = (2n − 1)π/2L is an exact discrete mode.
    const out = acoustic.run(acoustic.resolve({ cells: 200 }));
    const h = 0.5 / 200;
    (out.outputs.resonances as number[]).forEach((f, i) => {
      const k = ((2 * i + 1) * Math.PI) / (2 * 0.5);
      const exact = (343 * (2 / h) * Math.sin((k * h) / 2)) / (2 * Math.PI);
      expect(Math.abs(f - exact) / exact).toBeLessThan(1e-11);
    });
  });

  it('mode above 10 is computed beyond the listed resonances', () => {
    const out = acoustic.run(acoustic.resolve({ mode: 15, cells: 4000 }));
    expect(Math.abs(out.value - (29 * 343) / 2) / ((29 * 343) / 2)).toBeLessThan(1e-5);
    expect(out.check.passed).toBe(true);
  });

  it('a coarse grid for a high mode fails the check (422 at the gate)', () => {
    const out = acoustic.run(acoustic.resolve({ mode: 20, cells: 100 }));
    expect(out.check.passed).toBe(false);
  });

  it('defaults resolve and echo the keys of the shape', () => {
    expect(acoustic.resolve({})).toEqual({
      shape: 'cylinder',
      length_m: 0.5,
      ends: 'closed-open',
      sound_speed_m_s: 343,
      mode: 1,
      cells: 1000,
      radius_m: 0.01,
    });
    expect(acoustic.resolve({ shape: 'cone' })).toEqual({
      shape: 'cone',
      length_m: 0.5,
      ends: 'closed-open',
      sound_speed_m_s: 343,
      mode: 1,
      cells: 1000,
      radius_small_m: 0.002,
      radius_large_m: 0.03,
    });
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ colour: 1 }, 'colour'],
    [{ shape: 'sphere' }, 'shape'],
    [{ length_m: '1' }, 'length_m'],
    [{ length_m: 200 }, 'length_m'],
    [{ radius_m: 0 }, 'radius_m'],
    [{ radius_small_m: 0.01 }, 'radius_small_m'], // a cone key on a cylinder
    [{ shape: 'cone', radius_small_m: 0.04 }, 'radius_small_m'],
    [{ shape: 'cone', ends: 'closed-closed' }, 'ends'],
    [{ ends: 'open-closed' }, 'ends'],
    [{ sound_speed_m_s: 0.5 }, 'sound_speed_m_s'],
    [{ mode: 0 }, 'mode'],
    [{ mode: 21 }, 'mode'],
    [{ cells: 99 }, 'cells'],
    [{ cells: 100001 }, 'cells'],
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => acoustic.resolve(raw), field);
    });
  }

  it('radii have a finite range: at its corners the resonances match (2n−1)c/4L, nc/2L and the cone root', () => {
    // Old code: "> 0" — radii of 1e-300 or 1e300 made the areas under- or overflow and every resonance NaN.
    const f = (raw: Record<string, unknown>) => acoustic.run(acoustic.resolve(raw));
    for (const r of [1e-6, 10]) {
      const co = f({ radius_m: r, mode: 3 });
      expect(Math.abs(co.value - (5 * 343) / 2) / ((5 * 343) / 2)).toBeLessThan(1e-5);
      const oo = f({ radius_m: r, ends: 'open-open', mode: 2 });
      expect(Math.abs(oo.value - (2 * 343) / 1) / ((2 * 343) / 1)).toBeLessThan(1e-5);
      const cc = f({ radius_m: r, ends: 'closed-closed', mode: 1 });
      expect(Math.abs(cc.value - 343) / 343).toBeLessThan(1e-5);
      for (const out of [co, oo, cc]) expect(out.check.passed).toBe(true);
    }
    for (const [rs, rl] of [
      [1e-6, 2e-6],
      [1e-6, 10],
      [9.999, 10],
    ] as const) {
      const out = f({ shape: 'cone', radius_small_m: rs, radius_large_m: rl, mode: 2 });
      const ref = coneClosedOpen(343, 0.5, rs, rl, 2);
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.value - ref) / ref).toBeLessThan(1e-4);
    }
    for (const r of [5e-324, 1e-300, 9e-7])
      expectInputError(() => acoustic.resolve({ radius_m: r }), 'radius_m', { status: 400, allowed: { min: 1e-6, inclusive: true } });
    for (const r of [11, 1e100, Number.MAX_VALUE])
      expectInputError(() => acoustic.resolve({ radius_m: r }), 'radius_m', { status: 400, allowed: { max: 10, inclusive: true } });
    expectInputError(() => acoustic.resolve({ shape: 'cone', radius_small_m: 1e-300 }), 'radius_small_m', { allowed: { min: 1e-6, inclusive: true } });
    expectInputError(() => acoustic.resolve({ shape: 'cone', radius_large_m: 1e300 }), 'radius_large_m', { allowed: { max: 10, inclusive: true } });
  });

  it('is deterministic', () => {
    for (const raw of [{}, { shape: 'cone', mode: 3 }]) {
      const a = acoustic.run(acoustic.resolve(raw));
      const b = acoustic.run(acoustic.resolve(raw));
      expect(Object.is(a.value, b.value)).toBe(true);
      expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    }
  });

  it('a result 1 % off fails the gate', () => {
    for (const raw of [{}, { shape: 'cone' }]) expectGateRefusesPerturbed(acoustic.run(acoustic.resolve(raw)));
  });
});
