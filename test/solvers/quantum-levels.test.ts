import { describe, expect, it } from 'vitest';
import { quantumLevels } from '../../src/solvers/quantum-levels.js';
import { bisect } from '../../src/numerics/roots.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

const HBAR = 6.62607015e-34 / (2 * Math.PI);
const EV = 1.602176634e-19;
const ME = 9.1093837015e-31;

// Independent references, written here from the textbook formulas.
function harmonic(omega: number, n: number): number {
  return HBAR * omega * (n + 0.5);
}
function infiniteWell(m: number, L: number, n: number): number {
  return ((n + 1) * Math.PI * HBAR) ** 2 / (2 * m * L * L);
}
function morse(m: number, de: number, a: number, n: number): number {
  const w0 = a * Math.sqrt((2 * de) / m);
  const e = HBAR * w0 * (n + 0.5);
  return e - (e * e) / (4 * de);
}
// Finite well by bisection on the matching condition written with k and κ (not the z-form the solver uses):
// even: κ = k tan(kL/2); odd: κ = −k cot(kL/2), with k² + κ² = 2mV0/ħ².
function finiteWell(m: number, L: number, v0: number, n: number): number {
  const q2 = (2 * m * v0) / (HBAR * HBAR);
  const g = (k: number) => {
    const kappa = Math.sqrt(Math.max(q2 - k * k, 0));
    const s = Math.sin((k * L) / 2);
    const c = Math.cos((k * L) / 2);
    return n % 2 === 0 ? k * s - kappa * c : k * c + kappa * s;
  };
  const lo = (n * Math.PI) / L;
  const hi = Math.min(((n + 1) * Math.PI) / L, Math.sqrt(q2));
  const k = bisect(g, lo, hi, 1e-14 * hi);
  return (HBAR * k) ** 2 / (2 * m);
}

const cases: [Record<string, unknown>, () => number, number][] = [
  [{}, () => harmonic(1e15, 0), 2e-5],
  [{ level: 3, omega_rad_s: 3e14 }, () => harmonic(3e14, 3), 1e-4],
  [{ level: 10, mass_kg: 1e-29, grid_points: 4000 }, () => harmonic(1e15, 10), 1e-4],
  [{ potential: 'infinite_well' }, () => infiniteWell(ME, 1e-9, 0), 1e-6],
  [{ potential: 'infinite_well', level: 7, grid_points: 500, width_m: 2e-8 }, () => infiniteWell(ME, 2e-8, 7), 5e-4],
  [{ potential: 'finite_well' }, () => finiteWell(ME, 1e-9, EV, 0), 1e-4],
  [{ potential: 'finite_well', level: 1 }, () => finiteWell(ME, 1e-9, EV, 1), 1e-4],
  [{ potential: 'finite_well', depth_J: 10 * EV, level: 4, cells_in_well: 400 }, () => finiteWell(ME, 1e-9, 10 * EV, 4), 2e-4],
  [{ potential: 'morse' }, () => morse(8.367664e-28, 4.746 * EV, 1.9426e10, 0), 1e-4],
  [{ potential: 'morse', level: 5 }, () => morse(8.367664e-28, 4.746 * EV, 1.9426e10, 5), 3e-4],
  [{ potential: 'morse', level: 2, grid_points: 6000 }, () => morse(8.367664e-28, 4.746 * EV, 1.9426e10, 2), 2e-5],
];

describe('quantum_levels', () => {
  for (const [raw, expected, tol] of cases) {
    it(`matches the closed form: ${JSON.stringify(raw)}`, () => {
      const inputs = quantumLevels.resolve(raw);
      const out = quantumLevels.run(inputs);
      const ref = expected();
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.check.reference - ref) / ref).toBeLessThan(1e-10);
      expect(Math.abs(out.value - ref) / ref).toBeLessThan(tol);
      expect(out.check.computed).toBe(out.value);
      expect(out.unit).toBe('J');
      expect(out.mode).toBe(inputs.potential);
      expect(out.output_class).toBe('spectrum');
      expect(out.rule8_array).toBe('levels');
      const levels = out.outputs.levels as number[];
      expect(out.rule8).toEqual(levels);
      expect(levels.length).toBe(Math.max(inputs.level + 1, Math.min(inputs.level + 5, 20)));
      expect(levels[inputs.level]).toBe(out.value);
      for (let i = 1; i < levels.length; i++) expect(levels[i]!).toBeGreaterThan(levels[i - 1]!);
      const psi = out.outputs.wavefunction as number[];
      const x = out.outputs.x_m as number[];
      expect(psi.length).toBeLessThanOrEqual(512);
      expect(x.length).toBe(psi.length);
      expect((out.outputs.levels_eV as number[])[0]).toBeCloseTo(levels[0]! / EV, 12);
    });
  }

  it('Sturm eigenvalues equal the exact eigenvalues of the FD infinite-well matrix', () => {
    // The 3-point Laplacian on N interior nodes has eigenvalues (2t)(1 − cos((k+1)πh/L)), t = ħ²/(2mh²).
    const inputs = quantumLevels.resolve({ potential: 'infinite_well', grid_points: 300, level: 4 });
    const out = quantumLevels.run(inputs);
    const n = 300;
    const h = 1e-9 / (n + 1);
    const t = (HBAR * HBAR) / (2 * ME * h * h);
    (out.outputs.levels as number[]).forEach((e, k) => {
      const exact = 4 * t * Math.sin(((k + 1) * Math.PI) / (2 * (n + 1))) ** 2;
      expect(Math.abs(e - exact) / exact).toBeLessThan(1e-10);
    });
  });

  it('the wavefunction is normalised and has `level` nodes', () => {
    const out = quantumLevels.run(quantumLevels.resolve({ level: 3 }));
    const h = out.outputs.grid_spacing_m as number;
    expect(out.outputs.grid_points).toBe(2000);
    // The bounded profile strides the grid; with the full normalisation Σ ψ² h = 1, the strided sum approximates it.
    const psi = out.outputs.wavefunction as number[];
    const stride = (2000 - 1) / (psi.length - 1);
    const norm = psi.reduce((s, p) => s + p * p, 0) * h * stride;
    expect(norm).toBeCloseTo(1, 2);
    let signChanges = 0;
    const big = Math.max(...psi.map(Math.abs));
    let prev = 0;
    for (const p of psi) {
      if (Math.abs(p) < 1e-6 * big) continue;
      if (prev !== 0 && Math.sign(p) !== Math.sign(prev)) signChanges++;
      prev = p;
    }
    expect(signChanges).toBe(3);
  });

  it('defaults resolve and echo the keys of the potential', () => {
    expect(quantumLevels.resolve({})).toEqual({ potential: 'harmonic', mass_kg: ME, level: 0, omega_rad_s: 1e15, grid_points: 2000 });
    expect(quantumLevels.resolve({ potential: 'morse' })).toEqual({
      potential: 'morse',
      mass_kg: 8.367664e-28,
      level: 0,
      dissociation_energy_J: 4.746 * EV,
      morse_a_1_m: 1.9426e10,
      grid_points: 2000,
    });
    expect(quantumLevels.resolve({ potential: 'finite_well' })).toEqual({
      potential: 'finite_well',
      mass_kg: ME,
      level: 0,
      width_m: 1e-9,
      depth_J: EV,
      cells_in_well: 200,
    });
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ colour: 1 }, 'colour'],
    [{ potential: 'coulomb' }, 'potential'],
    [{ level: 'two' }, 'level'],
    [{ level: 21 }, 'level'],
    [{ level: 1.5 }, 'level'],
    [{ mass_kg: 1e-20 }, 'mass_kg'],
    [{ omega_rad_s: -1 }, 'omega_rad_s'],
    [{ grid_points: 100 }, 'grid_points'],
    [{ grid_points: 60000 }, 'grid_points'],
    [{ width_m: 1e-9 }, 'width_m'], // not a harmonic key
    [{ potential: 'finite_well', level: 2 }, 'level'], // the 1 eV, 1 nm well holds 2 bound states
    [{ potential: 'morse', level: 17 }, 'level'], // H2 holds 17 (0 … 16)
    [{ potential: 'finite_well', cells_in_well: 49 }, 'cells_in_well'],
    [{ potential: 'finite_well', width_m: 1e-12, depth_J: 1e-19, cells_in_well: 5000 }, 'cells_in_well'], // work limit
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => quantumLevels.resolve(raw), field);
    });
  }

  it('ω, well depth and Morse parameters have finite ranges: the corners match the closed forms', () => {
    // Old code: "> 0" — ω of 1e-300 or 1e300 and a Morse D_e of 1e300 gave NaN levels; a 1e30 J well threw in Brent (500).
    for (const omega of [1e3, 1e20]) {
      for (const m of [1e-32, 1e-24]) {
        const ground = quantumLevels.run(quantumLevels.resolve({ omega_rad_s: omega, mass_kg: m }));
        expect(ground.check.passed).toBe(true);
        expect(Math.abs(ground.value - harmonic(omega, 0)) / harmonic(omega, 0)).toBeLessThan(2e-5);
        const tenth = quantumLevels.run(quantumLevels.resolve({ omega_rad_s: omega, mass_kg: m, level: 10, grid_points: 4000 }));
        expect(Math.abs(tenth.value - harmonic(omega, 10)) / harmonic(omega, 10)).toBeLessThan(1e-4);
      }
    }
    // The shallowest well in the widest, heaviest case (z0 ≈ 2.1e3) and the deepest in the narrowest, lightest (z0 ≈ 6.7).
    for (const [v0, m, L, cells] of [
      [1e-25, 1e-24, 1e-6, 5000],
      [1e-10, 1e-32, 1e-12, 200],
      [1e-10, ME, 1e-9, 5000],
    ] as const) {
      const out = quantumLevels.run(quantumLevels.resolve({ potential: 'finite_well', depth_J: v0, mass_kg: m, width_m: L, cells_in_well: cells }));
      expect(out.check.passed).toBe(true);
      const ref = finiteWell(m, L, v0, 0);
      expect(Math.abs(out.value - ref) / ref).toBeLessThan(1e-3);
    }
    for (const [de, a] of [
      [1e-25, 1e6],
      [1e-15, 1e12],
    ] as const) {
      const out = quantumLevels.run(quantumLevels.resolve({ potential: 'morse', dissociation_energy_J: de, morse_a_1_m: a }));
      expect(out.check.passed).toBe(true);
      const ref = morse(8.367664e-28, de, a, 0);
      expect(Math.abs(out.value - ref) / ref).toBeLessThan(1e-3);
    }
    const outside: [Record<string, unknown>, string, unknown][] = [
      [{ omega_rad_s: 1e-300 }, 'omega_rad_s', { min: 1e3, inclusive: true }],
      [{ omega_rad_s: 1e300 }, 'omega_rad_s', { max: 1e20, inclusive: true }],
      [{ potential: 'finite_well', depth_J: 5e-324 }, 'depth_J', { min: 1e-25, inclusive: true }],
      [{ potential: 'finite_well', depth_J: 1e30 }, 'depth_J', { max: 1e-10, inclusive: true }],
      [{ potential: 'morse', dissociation_energy_J: 1e300 }, 'dissociation_energy_J', { max: 1e-15, inclusive: true }],
      [{ potential: 'morse', morse_a_1_m: 1e-300 }, 'morse_a_1_m', { min: 1e6, inclusive: true }],
    ];
    for (const [raw, field, allowed] of outside) expectInputError(() => quantumLevels.resolve(raw), field, { status: 400, allowed });
  });

  it('is deterministic', () => {
    for (const raw of [{}, { potential: 'finite_well', level: 1 }]) {
      const a = quantumLevels.run(quantumLevels.resolve(raw));
      const b = quantumLevels.run(quantumLevels.resolve(raw));
      expect(Object.is(a.value, b.value)).toBe(true);
      expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    }
  });

  it('a result 1 % off fails the gate', () => {
    for (const raw of [{}, { potential: 'finite_well' }, { potential: 'morse' }]) expectGateRefusesPerturbed(quantumLevels.run(quantumLevels.resolve(raw)));
  });
});
