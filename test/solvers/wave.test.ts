import { describe, expect, it } from 'vitest';
import { wave, type WaveInputs } from '../../src/solvers/wave.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

const C0 = 299_792_458;

// Continuum closed forms: membrane f = (c/2L)√(m²+n²), cavity f = m c0/2L.
function closedForm(i: WaveInputs): number {
  if (i.mode === 'membrane') return (Math.sqrt(i.tension_N_m / i.areal_density_kg_m2) / (2 * i.side_m)) * Math.hypot(i.mode_m, i.mode_n);
  return (i.mode_m * C0) / (2 * i.length_m);
}

// The exact discrete dispersion relation of each scheme for a pure normal mode (independent of any time stepping):
// leapfrog 5-point: sin²(ωdt/2) = C²[sin²(mπ/2(nx−1)) + sin²(nπ/2(nx−1))]; Yee 1-D: sin(ωdt/2) = C sin(mπ/2(nx−1)).
function discreteFrequency(i: WaveInputs): number {
  const N = i.nx - 1;
  const L = i.mode === 'membrane' ? i.side_m : i.length_m;
  const c = i.mode === 'membrane' ? Math.sqrt(i.tension_N_m / i.areal_density_kg_m2) : C0;
  const dt = (i.courant * (L / N)) / c;
  const sx = Math.sin((i.mode_m * Math.PI) / (2 * N));
  const s2 = i.mode === 'membrane' ? sx * sx + Math.sin((i.mode_n * Math.PI) / (2 * N)) ** 2 : sx * sx;
  const omega = (2 * Math.asin(i.courant * Math.sqrt(s2))) / dt;
  return omega / (2 * Math.PI);
}

const cases: Record<string, unknown>[] = [
  {},
  { mode_m: 2, mode_n: 1, courant: 0.6 },
  { mode_m: 3, mode_n: 2, nx: 121, side_m: 2, tension_N_m: 50, areal_density_kg_m2: 0.5, periods: 8, amplitude_m: -0.02 },
  { mode: 'maxwell' },
  { mode: 'maxwell', mode_m: 3, nx: 601, length_m: 0.03 },
  { mode: 'maxwell', courant: 0.9, mode_m: 10, nx: 401, periods: 20, e0_V_m: -5 },
];

function runRaw(raw: Record<string, unknown>) {
  const inputs = wave.resolve(raw);
  return { inputs, out: wave.run(inputs) };
}

describe('wave', () => {
  for (const raw of cases) {
    it(`measures the mode frequency: ${JSON.stringify(raw)}`, () => {
      const inputs = wave.resolve(raw);
      const out = wave.run(inputs);
      const f = closedForm(inputs);
      expect(out.check.passed).toBe(true);
      expect(out.check.reference).toBeCloseTo(f, 6);
      expect(Math.abs(out.value - f) / f).toBeLessThan(5e-4);
      expect(Math.abs(out.value - discreteFrequency(inputs)) / f).toBeLessThan(1e-7);
      expect(out.unit).toBe('Hz');
      expect(out.mode).toBe(inputs.mode);
      expect(out.outputs.periods_measured).toBe(Math.ceil(inputs.periods) - 1);
      if (inputs.mode === 'membrane') {
        expect(out.output_class).toBe('field');
        expect(out.rule8_array).toBe('displacement');
        const d = out.outputs.displacement as { u_m: number[][]; dx_m: number; x_m: number[] };
        expect(d.u_m.length).toBeLessThanOrEqual(64);
        expect(d.u_m[0]!.length).toBe(d.x_m.length);
        expect(out.rule8).toEqual(d.u_m);
        expect(out.outputs.wave_speed_m_s).toBeCloseTo(Math.sqrt(inputs.tension_N_m / inputs.areal_density_kg_m2), 12);
      } else {
        expect(out.output_class).toBe('profile');
        expect(out.rule8_array).toBe('E');
        const E = out.outputs.E as { x_m: number[]; E_V_m: number[] };
        const B = out.outputs.B as { x_m: number[]; B_T: number[] };
        expect(E.E_V_m.length).toBeLessThanOrEqual(512);
        expect(E.x_m.length).toBe(E.E_V_m.length);
        expect(B.B_T.length).toBe(B.x_m.length);
        expect(out.rule8).toEqual(E.E_V_m);
        expect(out.outputs.wave_speed_m_s).toBe(C0);
      }
    });
  }

  it('at courant 1 the 1-D Yee scheme is exact (magic time step)', () => {
    const out = wave.run(wave.resolve({ mode: 'maxwell', courant: 1 }));
    expect(out.check.rel_error).toBeLessThan(1e-12);
  });

  it('defaults resolve per mode', () => {
    expect(wave.resolve({})).toEqual({
      mode: 'membrane',
      side_m: 1,
      tension_N_m: 100,
      areal_density_kg_m2: 0.1,
      mode_m: 1,
      mode_n: 1,
      nx: 61,
      courant: 0.5,
      periods: 5,
      amplitude_m: 1e-3,
    });
    expect(wave.resolve({ mode: 'maxwell' })).toEqual({ mode: 'maxwell', length_m: 1, mode_m: 1, nx: 201, courant: 0.5, periods: 5, e0_V_m: 1 });
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ speed: 3 }, 'speed'],
    [{ side_m: '1' }, 'side_m'],
    [{ mode: 'string' }, 'mode'],
    [{ side_m: 1000 }, 'side_m'],
    [{ tension_N_m: 0 }, 'tension_N_m'],
    [{ mode_m: 11 }, 'mode_m'],
    [{ mode_m: 1.5 }, 'mode_m'],
    [{ nx: 401 }, 'nx'],
    [{ mode: 'maxwell', nx: 30000 }, 'nx'],
    [{ courant: 0.8 }, 'courant'],
    [{ mode: 'maxwell', courant: 1.1 }, 'courant'],
    [{ periods: 1 }, 'periods'],
    [{ amplitude_m: 0 }, 'amplitude_m'],
    [{ mode: 'maxwell', side_m: 1 }, 'side_m'],
    [{ e0_V_m: 1 }, 'e0_V_m'],
    [{ nx: 301, mode_m: 10, mode_n: 10, periods: 50, courant: 0.05 }, 'periods'],
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => wave.resolve(raw), field);
    });
  }

  it('tension, areal density, amplitude and E0 have finite ranges: the corners give f = (c/2L)√(m²+n²) and m c0/2L', () => {
    // Old code: "> 0" / "≠ 0" let A = ±MAX_VALUE and E0 = 5e-324 through (no zero crossing: a 500) and
    // T = 1e-300 with μ = 1e300 made the run length NaN.
    for (const T of [1e-6, 1e9])
      for (const mu of [1e-8, 1e4])
        for (const A of [1e-15, -100]) {
          const { inputs, out } = runRaw({ tension_N_m: T, areal_density_kg_m2: mu, amplitude_m: A, nx: 41 });
          expect(out.check.passed).toBe(true);
          expect(Math.abs(out.value - closedForm(inputs)) / closedForm(inputs)).toBeLessThan(1e-3);
          expect(Math.abs(out.value - discreteFrequency(inputs)) / discreteFrequency(inputs)).toBeLessThan(1e-6);
        }
    for (const e0 of [1e-12, -1e18]) {
      const { inputs, out } = runRaw({ mode: 'maxwell', e0_V_m: e0, nx: 101 });
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.value - closedForm(inputs)) / closedForm(inputs)).toBeLessThan(1e-3);
    }
    const outside: [Record<string, unknown>, string, unknown][] = [
      [{ tension_N_m: 1e-300 }, 'tension_N_m', { min: 1e-6, inclusive: true }],
      [{ tension_N_m: 1e300 }, 'tension_N_m', { max: 1e9, inclusive: true }],
      [{ areal_density_kg_m2: 5e-324 }, 'areal_density_kg_m2', { min: 1e-8, inclusive: true }],
      [{ areal_density_kg_m2: 1e300 }, 'areal_density_kg_m2', { max: 1e4, inclusive: true }],
    ];
    for (const [raw, field, allowed] of outside) expectInputError(() => wave.resolve(raw), field, { status: 400, allowed });
    for (const A of [Number.MAX_VALUE, -Number.MAX_VALUE, 101, 1e-16])
      expectInputError(() => wave.resolve({ amplitude_m: A }), 'amplitude_m', { status: 400, reason: 'magnitude must be 1e-15 … 100 m (either sign)' });
    for (const e0 of [5e-324, -1e-13, 1e19, Number.MAX_VALUE])
      expectInputError(() => wave.resolve({ mode: 'maxwell', e0_V_m: e0 }), 'e0_V_m', {
        status: 400,
        reason: 'magnitude must be 1e-12 … 1e18 V/m (either sign)',
      });
  });

  it('is deterministic', () => {
    for (const raw of [{}, { mode: 'maxwell' }]) {
      const a = wave.run(wave.resolve(raw));
      const b = wave.run(wave.resolve(raw));
      expect(Object.is(a.value, b.value)).toBe(true);
      expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    }
  });

  it('a result perturbed by 1 % fails the gate', () => {
    for (const raw of [{}, { mode: 'maxwell' }]) expectGateRefusesPerturbed(wave.run(wave.resolve(raw)));
  });
});
