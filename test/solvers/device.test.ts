import { describe, expect, it } from 'vitest';
import { device } from '../../src/solvers/device.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

const Q = 1.602176634e-19;
const KB = 1.380649e-23;
const EPS0 = 8.8541878128e-12;

// Closed forms, written here from the physics: built-in potential of Boltzmann carriers, and the peak field
// from the first integral of the Poisson–Boltzmann equation across each side of an abrupt junction.
function closedForms(NA: number, ND: number, ni = 1e16, T = 300, epsR = 11.7) {
  const vt = (KB * T) / Q;
  const psiP = -vt * Math.asinh(NA / (2 * ni));
  const psiN = vt * Math.asinh(ND / (2 * ni));
  const n = (v: number) => ni * Math.exp(v / vt);
  const p = (v: number) => ni * Math.exp(-v / vt);
  // Potential at the junction where the two sides' first integrals give the same field.
  const psiJ = (NA * psiP + ND * psiN + vt * (p(psiP) + n(psiP) - p(psiN) - n(psiN))) / (NA + ND);
  const eps = epsR * EPS0;
  const eMax = Math.sqrt(((2 * Q) / eps) * (vt * (p(psiJ) - p(psiP) + n(psiJ) - n(psiP)) + NA * (psiJ - psiP)));
  // n-side first integral evaluated independently: must give the same field.
  const eMaxN = Math.sqrt(((2 * Q) / eps) * (vt * (p(psiJ) - p(psiN) + n(psiJ) - n(psiN)) + ND * (psiN - psiJ)));
  return { vt, vbi: psiN - psiP, psiP, eMax, eMaxN };
}

const cases1d: [Record<string, unknown>, number, number][] = [
  [{}, 1e22, 1e22],
  [{ acceptor_m3: 1e24, donor_m3: 1e22 }, 1e24, 1e22],
  [{ acceptor_m3: 1e20, donor_m3: 1e20, length_p_m: 1e-5, length_n_m: 1e-5 }, 1e20, 1e20],
  [{ acceptor_m3: 1e24, donor_m3: 1e24, length_p_m: 3e-7, length_n_m: 5e-7 }, 1e24, 1e24],
];

describe('device pn1d', () => {
  for (const [raw, NA, ND] of cases1d) {
    it(`V_bi and peak field match the closed forms: ${JSON.stringify(raw)}`, () => {
      const inputs = device.resolve(raw);
      const out = device.run(inputs);
      const ref = closedForms(NA, ND);
      expect(Math.abs(ref.eMax - ref.eMaxN) / ref.eMax).toBeLessThan(1e-9);
      expect(out.check.passed).toBe(true);
      expect(out.check.parts).toHaveLength(2);
      expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(1e-8);
      const eJ = out.outputs.junction_field_V_m as number;
      expect(Math.abs(eJ - ref.eMax) / ref.eMax).toBeLessThan(3e-4);
      expect(out.check.parts![1]!.computed).toBe(eJ);
      expect(out.check.parts![0]!.computed).toBe(out.value);
      expect(out.unit).toBe('V');
      expect(out.mode).toBe('pn1d');
      expect(out.output_class).toBe('profile');
      expect(out.rule8_array).toBe('potential');
      const psi = out.outputs.potential as number[];
      const x = out.outputs.x_m as number[];
      expect(out.rule8).toEqual(psi);
      expect(psi.length).toBeLessThanOrEqual(512);
      expect(x.length).toBe(psi.length);
      expect((out.outputs.n_m3 as number[]).length).toBe(psi.length);
      expect((out.outputs.p_m3 as number[]).length).toBe(psi.length);
      // Potential rises monotonically from the p contact value to the n bulk.
      for (let i = 1; i < psi.length; i++) expect(psi[i]!).toBeGreaterThanOrEqual(psi[i - 1]! - 1e-12);
      expect(Math.abs(psi[0]! - ref.psiP)).toBeLessThan(1e-3);
      // Mass action: log10 n + log10 p = 2 log10 n_i everywhere.
      const n = out.outputs.n_m3 as number[];
      const p = out.outputs.p_m3 as number[];
      n.forEach((ln, i) => expect(ln + p[i]!).toBeCloseTo(32, 9));
      expect(out.outputs.peak_field_V_m as number).toBeGreaterThanOrEqual(eJ);
      expect(out.outputs.newton_iterations as number).toBeGreaterThan(1);
    });
  }

  it('depletion width is near the depletion-approximation value √(2ε(V_bi − 2V_T)(N_A+N_D)/(qN_AN_D))', () => {
    const out = device.run(device.resolve({}));
    const ref = closedForms(1e22, 1e22);
    const w = Math.sqrt((2 * 11.7 * EPS0 * (ref.vbi - 2 * ref.vt) * 2e22) / (Q * 1e44));
    expect(Math.abs((out.outputs.depletion_width_m as number) - w) / w).toBeLessThan(0.1);
  });

  it('refines the grid to dx ≤ L_D/16', () => {
    const out = device.run(device.resolve({ acceptor_m3: 1e25, donor_m3: 1e25 }));
    const LD = Math.sqrt((11.7 * EPS0 * closedForms(1, 1).vt) / (Q * 1e25));
    expect(out.outputs.cell_width_p_m as number).toBeLessThanOrEqual(LD / 16);
    expect(out.outputs.cells_used as number).toBeGreaterThan(2000);
    expect(out.check.passed).toBe(true);
  });

  it('too short an n region fails V_bi with the reason', () => {
    const out = device.run(device.resolve({ length_n_m: 5e-8 }));
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toMatch(/n region is too short.*charge neutral.*length_n_m/);
  });

  it('a p side shorter than its depletion width is refused naming the p region; long enough, it passes', () => {
    // N_A = 1e20 against N_D = 1e22: nearly all of the ~3 µm depletion lies on the p side, beyond its 2 µm.
    const short = device.run(device.resolve({ acceptor_m3: 1e20, donor_m3: 1e22 }));
    expect(short.check.passed).toBe(false);
    expect(short.check.refused).toMatch(/p region is too short.*length_p_m/);
    const long = device.run(device.resolve({ acceptor_m3: 1e20, donor_m3: 1e22, length_p_m: 1e-4, length_n_m: 2e-6 }));
    const ref = closedForms(1e20, 1e22);
    expect(long.check.passed).toBe(true);
    expect(Math.abs(long.value - ref.vbi) / ref.vbi).toBeLessThan(1e-4);
    expect(Math.abs((long.outputs.junction_field_V_m as number) - ref.eMax) / ref.eMax).toBeLessThan(1e-3);
  });

  it('a doping below n_i (screened by the intrinsic carriers) matches the closed forms', () => {
    for (const [NA, ND] of [
      [1e20, 1e20],
      [1e18, 1e20],
    ]) {
      const out = device.run(device.resolve({ acceptor_m3: NA, donor_m3: ND, intrinsic_m3: 1e22 }));
      const ref = closedForms(NA!, ND!, 1e22);
      expect(out.check.passed).toBe(true);
      // V_bi ≈ V_T (N_A + N_D)/(2 n_i) here: microvolts.
      expect(ref.vbi).toBeLessThan(1e-3);
      expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(1e-3);
    }
  });
});

describe('device pn2d', () => {
  it('default well: V_bi from the bottom-row mean matches the closed form', () => {
    const inputs = device.resolve({ mode: 'pn2d' });
    const out = device.run(inputs);
    const ref = closedForms(1e23, 1e21);
    expect(out.check.passed).toBe(true);
    expect(out.check.parts).toHaveLength(1);
    expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(5e-4);
    expect(out.mode).toBe('pn2d');
    expect(out.output_class).toBe('field');
    expect(out.rule8_array).toBe('potential');
    const psi = out.outputs.potential as number[][];
    expect(out.rule8).toEqual(psi);
    expect(psi.length).toBeLessThanOrEqual(64);
    expect(psi[0]!.length).toBeLessThanOrEqual(64);
    expect((out.outputs.x_m as number[]).length).toBe(psi[0]!.length);
    expect((out.outputs.y_m as number[]).length).toBe(psi.length);
    // The contacted top centre sits at ψ_p, the substrate far below at ψ_n.
    const mid = Math.floor(psi[0]!.length / 2);
    expect(Math.abs(psi[0]![mid]! - ref.psiP)).toBeLessThan(0.01);
    expect(out.outputs.cg_iterations as number).toBeGreaterThan(0);
  });

  it('well with other dopings and geometry', () => {
    const out = device.run(
      device.resolve({
        mode: 'pn2d',
        acceptor_m3: 1e22,
        donor_m3: 1e22,
        width_m: 2e-6,
        depth_m: 1.5e-6,
        well_width_m: 1e-6,
        well_depth_m: 0.4e-6,
        nx: 80,
        ny: 60,
      }),
    );
    const ref = closedForms(1e22, 1e22);
    expect(out.check.passed).toBe(true);
    expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(1e-4);
  });

  it('planar: V_bi and the junction face field match the closed forms on a resolving grid', () => {
    const out = device.run(device.resolve({ mode: 'pn2d', geometry: 'planar', acceptor_m3: 1e21, donor_m3: 1e21, nx: 200, ny: 20 }));
    const ref = closedForms(1e21, 1e21);
    expect(out.check.passed).toBe(true);
    expect(out.check.parts).toHaveLength(2);
    expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(1e-5);
    expect(Math.abs((out.outputs.junction_field_V_m as number) - ref.eMax) / ref.eMax).toBeLessThan(2e-4);
  });

  it('planar at the defaults passes: V_bi and the junction face field match the closed forms', () => {
    const raw = { mode: 'pn2d', geometry: 'planar' };
    const inputs = device.resolve(raw);
    expect(inputs).toMatchObject({ nx: 100, ny: 50, width_m: 4e-6, depth_m: 2e-6, acceptor_m3: 1e23, donor_m3: 1e21 });
    const out = device.run(inputs);
    const ref = closedForms(1e23, 1e21);
    expect(out.check.passed).toBe(true);
    expect(out.check.refused).toBeUndefined();
    expect(out.check.parts).toHaveLength(2);
    const [vbiPart, fieldPart] = out.check.parts!;
    expect(vbiPart!.reference).toBeCloseTo(ref.vbi, 12);
    expect(fieldPart!.reference / ref.eMax).toBeCloseTo(1, 12);
    expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(1e-4);
    const eJ = out.outputs.junction_field_V_m as number;
    expect(fieldPart!.computed).toBe(eJ);
    expect(Math.abs(eJ - ref.eMax) / ref.eMax).toBeLessThan(8e-4);
    expect(Math.abs(eJ - ref.eMax) / ref.eMax).toBeLessThan(fieldPart!.tolerance);
    expect(out.outputs.peak_field_V_m as number).toBeGreaterThanOrEqual(eJ * (1 - 1e-9));
    // The columns at the junction resolve the Debye length of the heavier side (L_D/16, as pn1d), within nx·ny.
    const LD = Math.sqrt((11.7 * EPS0 * ref.vt) / (Q * 1e23));
    expect(out.outputs.dx_m as number).toBeLessThanOrEqual((LD / 16) * (1 + 1e-9));
    expect(out.outputs.dx_max_m as number).toBeLessThan(4e-6 / 2);
    // Depletion width near the depletion approximation √(2ε(V_bi − 2V_T)(N_A+N_D)/(qN_AN_D)).
    const w = Math.sqrt((2 * 11.7 * EPS0 * (ref.vbi - 2 * ref.vt) * (1e23 + 1e21)) / (Q * 1e23 * 1e21));
    expect(Math.abs((out.outputs.depletion_width_m as number) - w) / w).toBeLessThan(0.1);
    // Column centres increase from 0 to width_m; the potential is independent of depth (rows agree).
    const x = out.outputs.x_m as number[];
    for (let i = 1; i < x.length; i++) expect(x[i]!).toBeGreaterThan(x[i - 1]!);
    expect(x[0]!).toBeGreaterThan(0);
    expect(x[x.length - 1]!).toBeLessThan(4e-6);
    const psi = out.outputs.potential as number[][];
    for (const row of psi) row.forEach((v, i) => expect(Math.abs(v - psi[0]![i]!)).toBeLessThan(1e-9));
  });

  it('planar at the defaults with other dopings and temperatures passes', () => {
    for (const [raw, NA, ND, T] of [
      [{ acceptor_m3: 1e21, donor_m3: 1e23 }, 1e21, 1e23, 300],
      [{ acceptor_m3: 1e22, donor_m3: 1e22 }, 1e22, 1e22, 300],
      [{ acceptor_m3: 1e24, donor_m3: 1e22 }, 1e24, 1e22, 300],
      [{ temperature_K: 400 }, 1e23, 1e21, 400],
    ] as [Record<string, unknown>, number, number, number][]) {
      const out = device.run(device.resolve({ mode: 'pn2d', geometry: 'planar', ny: 8, ...raw }));
      const ref = closedForms(NA, ND, 1e16, T);
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(1e-3);
      expect(Math.abs((out.outputs.junction_field_V_m as number) - ref.eMax) / ref.eMax).toBeLessThan(1e-3);
    }
  });

  it('planar converges to the closed-form peak field as nx grows', () => {
    const ref = closedForms(1e23, 1e21);
    const err = (nx: number) => {
      const out = device.run(device.resolve({ mode: 'pn2d', geometry: 'planar', nx, ny: 4 }));
      return Math.abs((out.outputs.junction_field_V_m as number) - ref.eMax) / ref.eMax;
    };
    const [e50, e100, e400] = [err(50), err(100), err(400)];
    expect(e100).toBeLessThan(e50 / 3);
    expect(e400).toBeLessThan(e100 / 2);
    expect(e400).toBeLessThan(2e-4);
  });

  it('planar with too few columns to resolve the Debye length fails the field check (a 422, not a seal), saying to raise nx', () => {
    const out = device.run(device.resolve({ mode: 'pn2d', geometry: 'planar', nx: 40, ny: 10 }));
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toMatch(/40 columns do not resolve the junction field.*raise nx/);
    expect(out.check.parts![0]!.passed).toBe(true);
    expect(out.check.parts![1]!.passed).toBe(false);
  });

  it('planar at a 1000:1 doping ratio: the default 100 columns say to raise nx, and 200 pass against the closed forms', () => {
    const raw = { mode: 'pn2d', geometry: 'planar', acceptor_m3: 1e22, donor_m3: 1e25, ny: 4 };
    const coarse = device.run(device.resolve(raw));
    expect(coarse.check.passed).toBe(false);
    expect(coarse.check.refused).toMatch(/raise nx/);
    const fine = device.run(device.resolve({ ...raw, nx: 200 }));
    const ref = closedForms(1e22, 1e25);
    expect(fine.check.passed).toBe(true);
    expect(Math.abs(fine.value - ref.vbi) / ref.vbi).toBeLessThan(1e-4);
    expect(Math.abs((fine.outputs.junction_field_V_m as number) - ref.eMax) / ref.eMax).toBeLessThan(1e-3);
  });

  it('planar with a doping below n_i: the columns resolve the intrinsic Debye length and match the closed forms', () => {
    const out = device.run(device.resolve({ mode: 'pn2d', geometry: 'planar', acceptor_m3: 1e20, donor_m3: 1e20, intrinsic_m3: 1e22, ny: 4 }));
    const ref = closedForms(1e20, 1e20, 1e22);
    expect(out.check.passed).toBe(true);
    expect(Math.abs(out.value - ref.vbi) / ref.vbi).toBeLessThan(1e-3);
    expect(Math.abs((out.outputs.junction_field_V_m as number) - ref.eMax) / ref.eMax).toBeLessThan(1e-3);
    // The junction columns are L_D/16 of the carriers n + p = √(N² + 4n_i²), not of the doping alone.
    const LD = Math.sqrt((11.7 * EPS0 * ref.vt) / (Q * Math.hypot(1e20, 2e22)));
    expect(out.outputs.dx_m as number).toBeLessThanOrEqual((LD / 16) * (1 + 1e-9));
  });

  it('planar with a p side too short for its doping is refused naming the p region', () => {
    const out = device.run(device.resolve({ mode: 'pn2d', geometry: 'planar', acceptor_m3: 1e20, donor_m3: 1e22, ny: 4 }));
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toMatch(/p region is too short.*width_m/);
  });
});

describe('device inputs', () => {
  it('defaults resolve and echo the keys of the mode', () => {
    expect(device.resolve({})).toEqual({
      mode: 'pn1d',
      acceptor_m3: 1e22,
      donor_m3: 1e22,
      intrinsic_m3: 1e16,
      temperature_K: 300,
      rel_permittivity: 11.7,
      length_p_m: 2e-6,
      length_n_m: 2e-6,
      cells: 2000,
    });
    expect(device.resolve({ mode: 'pn2d' })).toEqual({
      mode: 'pn2d',
      acceptor_m3: 1e23,
      donor_m3: 1e21,
      intrinsic_m3: 1e16,
      temperature_K: 300,
      rel_permittivity: 11.7,
      geometry: 'well',
      width_m: 4e-6,
      depth_m: 2e-6,
      nx: 100,
      ny: 50,
      well_width_m: 2e-6,
      well_depth_m: 0.5e-6,
    });
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ colour: 1 }, 'colour'],
    [{ mode: 'pn3d' }, 'mode'],
    [{ acceptor_m3: '1e22' }, 'acceptor_m3'],
    [{ donor_m3: 1e26 }, 'donor_m3'],
    [{ intrinsic_m3: 1 }, 'intrinsic_m3'],
    [{ temperature_K: 900 }, 'temperature_K'],
    [{ rel_permittivity: 0.5 }, 'rel_permittivity'],
    [{ length_p_m: 1e-2 }, 'length_p_m'],
    [{ cells: 50 }, 'cells'],
    [{ length_p_m: 1e-3, length_n_m: 1e-3, acceptor_m3: 1e25 }, 'cells'], // > 100 000 cells after refinement
    [{ nx: 100 }, 'nx'], // a pn2d key in pn1d
    [{ mode: 'pn2d', cells: 100 }, 'cells'], // a pn1d key in pn2d
    [{ mode: 'pn2d', geometry: 'planar', well_width_m: 1e-6 }, 'well_width_m'],
    [{ mode: 'pn2d', geometry: 'disc' }, 'geometry'],
    [{ mode: 'pn2d', nx: 400, ny: 200 }, 'nx'], // nx·ny > 40 000
    [{ mode: 'pn2d', well_width_m: 5e-6 }, 'well_width_m'],
    [{ mode: 'pn2d', well_depth_m: 2e-6 }, 'well_depth_m'],
    [{ mode: 'pn2d', well_width_m: 1e-8, nx: 10 }, 'well_width_m'], // the grid resolves no well
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => device.resolve(raw), field);
    });
  }

  it('is deterministic', () => {
    for (const raw of [{}, { mode: 'pn2d', nx: 40, ny: 20 }, { mode: 'pn2d', geometry: 'planar' }]) {
      const a = device.run(device.resolve(raw));
      const b = device.run(device.resolve(raw));
      expect(Object.is(a.value, b.value)).toBe(true);
      expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    }
  });

  it('a result 1 % off fails the gate in every part', () => {
    const out = device.run(device.resolve({}));
    expect(expectGateRefusesPerturbed(out)).toHaveLength(out.check.parts!.length);
  });
});
