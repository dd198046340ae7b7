import { describe, expect, it } from 'vitest';
import { dock, type Atom } from '../../src/solvers/dock.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

function solve(raw: unknown) {
  return dock.run(dock.resolve(raw));
}

const expectInputError = inputErrorOnResolve(dock, { status: 400 });

function ring(n: number, R: number, sigma: number, epsilon: number, charge = 0): Atom[] {
  return Array.from({ length: n }, (_, k) => ({
    x: R * Math.cos((2 * Math.PI * k) / n),
    y: R * Math.sin((2 * Math.PI * k) / n),
    z: 0,
    sigma_A: sigma,
    epsilon_kJ_mol: epsilon,
    charge_e: charge,
  }));
}

/** Test-side pair energy (LJ with Lorentz–Berthelot mixing + Coulomb / ε_r), written independently. */
function pairEnergy(receptor: Atom[], ligand: Atom[], xyz: number[][], dielectric: number): number {
  let e = 0;
  ligand.forEach((l, i) => {
    for (const r of receptor) {
      const d = Math.sqrt((xyz[i]![0]! - r.x) ** 2 + (xyz[i]![1]! - r.y) ** 2 + (xyz[i]![2]! - r.z) ** 2);
      const s = (l.sigma_A + r.sigma_A) / 2;
      const eps = Math.sqrt(l.epsilon_kJ_mol * r.epsilon_kJ_mol);
      e += 4 * eps * ((s / d) ** 12 - (s / d) ** 6) + (1389.35458 * l.charge_e * r.charge_e) / (dielectric * d);
    }
  });
  return e;
}

/** Rodrigues rotation of v by the rotation vector w. */
function rotate(w: number[], v: number[]): number[] {
  const theta = Math.hypot(w[0]!, w[1]!, w[2]!);
  if (theta === 0) return [...v];
  const k = w.map((c) => c / theta);
  const kv = [k[1]! * v[2]! - k[2]! * v[1]!, k[2]! * v[0]! - k[0]! * v[2]!, k[0]! * v[1]! - k[1]! * v[0]!];
  const kdv = k[0]! * v[0]! + k[1]! * v[1]! + k[2]! * v[2]!;
  return v.map((c, i) => c * Math.cos(theta) + kv[i]! * Math.sin(theta) + k[i]! * kdv * (1 - Math.cos(theta)));
}

describe('dock: ring closed form E* = −nε at z* = ±√(2^(1/3)σ² − R²)', () => {
  it('defaults: 6-site ring, R = 3 Å, σ = 3.4 Å, ε = 0.36 kJ/mol → E* = −2.16 kJ/mol', () => {
    const inputs = dock.resolve({});
    expect(inputs.receptor).toHaveLength(6);
    expect(inputs.ligand).toHaveLength(1);
    expect(inputs.dielectric).toBe(4);
    expect(inputs.box_half_A).toBe(8);
    expect(inputs.n_starts).toBe(8);
    expect(inputs.mc_steps).toBe(2000);
    for (const c of inputs.box_center_A) expect(Math.abs(c)).toBeLessThan(1e-15);
    expect('seed' in inputs).toBe(false);

    const r = dock.run(inputs);
    const zStar = Math.sqrt(2 ** (1 / 3) * 3.4 ** 2 - 3 ** 2);
    expect(r.unit).toBe('kJ/mol');
    expect(r.mode).toBeNull();
    expect(r.output_class).toBe('scalar');
    expect(r.rule8).toBeNull();
    expect(r.rule8_array).toBeNull();
    expect(Math.abs(r.value - -2.16) / 2.16).toBeLessThan(1e-9);
    const [x, y, z] = (r.outputs.ligand_xyz_A as number[][])[0]!;
    expect(Math.hypot(x!, y!)).toBeLessThan(1e-6);
    expect(Math.abs(Math.abs(z!) - zStar)).toBeLessThan(1e-6);
    expect(r.outputs.contacts).toEqual([0, 1, 2, 3, 4, 5]);
    const perStart = r.outputs.per_start_energies as number[];
    expect(perStart).toHaveLength(8);
    for (const e of perStart) expect(e).toBeGreaterThanOrEqual(r.value);
    expect(r.check.passed).toBe(true);
    expect(r.check.parts).toHaveLength(2);
    expect(r.check.rel_error).toBeLessThan(1e-12);
    const pose = r.outputs.pose as { translation_A: number[]; rotation_vector: number[] };
    expect(pose.translation_A).toHaveLength(3);
    expect(pose.rotation_vector).toHaveLength(3);
  });

  it('an 8-site ring (R = 3.5 Å, σ = 3.2 Å, ε = 0.5) → E* = −4 kJ/mol', () => {
    const r = solve({ receptor: ring(8, 3.5, 3.2, 0.5), ligand: [{ x: 1, y: 2, z: 3, sigma_A: 3.2, epsilon_kJ_mol: 0.5 }], n_starts: 4 });
    const zStar = Math.sqrt(2 ** (1 / 3) * 3.2 ** 2 - 3.5 ** 2);
    expect(Math.abs(r.value - -4) / 4).toBeLessThan(1e-9);
    const [x, y, z] = (r.outputs.ligand_xyz_A as number[][])[0]!;
    expect(Math.hypot(x!, y!)).toBeLessThan(1e-5);
    expect(Math.abs(Math.abs(z!) - zStar)).toBeLessThan(1e-5);
    expect(r.check.passed).toBe(true);
  });

  it('mixing rules: ring σ = 3.0, ε = 0.4 and probe σ = 3.8, ε = 0.9 → σ_ij = 3.4, ε_ij = 0.6, E* = −3.0 (5 sites)', () => {
    const r = solve({ receptor: ring(5, 2.5, 3.0, 0.4), ligand: [{ x: 0, y: 0, z: 0, sigma_A: 3.8, epsilon_kJ_mol: 0.9 }], mc_steps: 1500, seed: 7 });
    const zStar = Math.sqrt(2 ** (1 / 3) * 3.4 ** 2 - 2.5 ** 2);
    expect(Math.abs(r.value - -3.0) / 3.0).toBeLessThan(1e-9);
    expect(Math.abs(Math.abs((r.outputs.ligand_xyz_A as number[][])[0]![2]!) - zStar)).toBeLessThan(1e-5);
    expect(r.check.passed).toBe(true);
  });
});

describe('dock: rigid multi-atom and charged ligands', () => {
  const ligand: Atom[] = [
    { x: 0, y: 0, z: 0, sigma_A: 3.0, epsilon_kJ_mol: 0.3, charge_e: -0.4 },
    { x: 1.5, y: 0, z: 0, sigma_A: 3.2, epsilon_kJ_mol: 0.4, charge_e: 0.1 },
    { x: 0.5, y: 1.2, z: 0.3, sigma_A: 2.8, epsilon_kJ_mol: 0.2, charge_e: 0 },
  ];
  const receptor = ring(6, 3.2, 3.4, 0.36, 0.15);

  it('the pose reproduces ligand_xyz_A, the shape stays rigid, the energy re-scores independently', () => {
    const r = solve({ receptor, ligand, dielectric: 8, n_starts: 6, mc_steps: 1500 });
    const xyz = r.outputs.ligand_xyz_A as number[][];
    expect(xyz).toHaveLength(3);
    // Rigid: every interatomic distance preserved.
    for (let i = 0; i < 3; i++) {
      for (let j = i + 1; j < 3; j++) {
        const d0 = Math.hypot(ligand[i]!.x - ligand[j]!.x, ligand[i]!.y - ligand[j]!.y, ligand[i]!.z - ligand[j]!.z);
        const d1 = Math.hypot(xyz[i]![0]! - xyz[j]![0]!, xyz[i]![1]! - xyz[j]![1]!, xyz[i]![2]! - xyz[j]![2]!);
        expect(d1).toBeCloseTo(d0, 12);
      }
    }
    // Pose = centroid translation + rotation vector about the centroid.
    const pose = r.outputs.pose as { translation_A: number[]; rotation_vector: number[] };
    const c0 = [0, 1, 2].map((d) => ligand.reduce((s, a) => s + [a.x, a.y, a.z][d]!, 0) / 3);
    ligand.forEach((a, i) => {
      const body = [a.x - c0[0]!, a.y - c0[1]!, a.z - c0[2]!];
      const moved = rotate(pose.rotation_vector, body).map((v, d) => v + c0[d]! + pose.translation_A[d]!);
      for (let d = 0; d < 3; d++) expect(moved[d]).toBeCloseTo(xyz[i]![d]!, 10);
    });
    expect(Math.abs(pairEnergy(receptor, ligand, xyz, 8) - r.value)).toBeLessThan(1e-10 * Math.abs(r.value));
    expect(r.value).toBeLessThan(0);
    expect(r.check.passed).toBe(true);
    // Local minimum: no axis shift of 0.002 Å lowers the test-side energy by more than round-off.
    for (let d = 0; d < 3; d++) {
      for (const s of [1, -1]) {
        const shifted = xyz.map((p) => p.map((v, k) => (k === d ? v + s * 0.002 : v)));
        expect(pairEnergy(receptor, ligand, shifted, 8)).toBeGreaterThan(r.value - 1e-9);
      }
    }
  });
});

describe('dock: randomness, seed and determinism', () => {
  it('same inputs → identical bits; an explicit seed is echoed and changes the search, not the optimum', () => {
    const a = solve({});
    const b = solve({});
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));

    const inputs = dock.resolve({ seed: 12345, n_starts: 3 });
    expect(inputs.seed).toBe(12345);
    const c = dock.run(inputs);
    expect(Math.abs(c.value - -2.16) / 2.16).toBeLessThan(1e-9);
    expect(c.outputs.per_start_energies as number[]).toHaveLength(3);
    expect(JSON.stringify(c.outputs.pose)).not.toBe(JSON.stringify(a.outputs.pose));
  });
});

describe('dock: input validation', () => {
  it('unknown keys, wrong types, out-of-range values', () => {
    expectInputError({ temperature: 300 }, 'temperature');
    expectInputError({ n_starts: 'many' }, 'n_starts');
    expectInputError({ n_starts: 65 }, 'n_starts');
    expectInputError({ mc_steps: 99 }, 'mc_steps');
    expectInputError({ dielectric: 0.5 }, 'dielectric');
    expectInputError({ box_half_A: 0.5 }, 'box_half_A');
    expectInputError({ box_center_A: [0, 0] }, 'box_center_A');
    // Coordinates within ±1e4 Å (PDB's field): at 1e300 the pose cannot move and re-scores as 0 against 0.
    expectInputError({ box_center_A: [1e300, 0, 0] }, 'box_center_A.0', { allowed: { max: 1e4, inclusive: true } });
    expectInputError({ receptor: [{ x: 0, y: 0, z: -1e5, sigma_A: 3, epsilon_kJ_mol: 0.3 }] }, 'receptor.0.z', { allowed: { min: -1e4, inclusive: true } });
    expectInputError({ seed: -1 }, 'seed');
    expectInputError({ receptor: [{ x: 0, y: 0, z: 0, epsilon_kJ_mol: 0.3 }] }, 'receptor.0.sigma_A');
    expectInputError({ ligand: [] }, 'ligand');
    const probe = { x: 0, y: 0, z: 0, sigma_A: 3, epsilon_kJ_mol: 0.3 };
    expectInputError({ ligand: Array.from({ length: 51 }, () => probe) }, 'ligand');
  });

  it('every atom has a repulsive core and a charge within ±10 e; atoms of one molecule are at least 0.5 Å apart', () => {
    const site = { x: 0, y: 0, z: 0, sigma_A: 3.4, epsilon_kJ_mol: 0, charge_e: -1 };
    const ion = { x: 0, y: 0, z: 0, sigma_A: 3.4, epsilon_kJ_mol: 0.36, charge_e: 1 };
    // ε = 0 on one atom of an opposite-charge pair: the Coulomb term falls without bound (it was sealed as −8e20 kJ/mol).
    expectInputError({ receptor: [site], ligand: [ion] }, 'receptor.0.epsilon_kJ_mol', { reason: /repulsive core/ });
    expectInputError({ ligand: [{ ...ion, charge_e: 11 }] }, 'ligand.0.charge_e');
    expectInputError({ ligand: [ion, { ...ion, x: 0.3 }] }, 'ligand.1', { reason: /at least 0\.5 Å apart/ });
    expectInputError(
      {
        receptor: [
          { ...ion, charge_e: 0 },
          { ...ion, charge_e: 0 },
        ],
      },
      'receptor.1',
    );
    // With a core the same pair has a minimum: finite, below the Lennard-Jones well alone (the charges attract), and
    // at a separation where the r^-12 wall holds (the closest approach stays above σ/2).
    const out = solve({ receptor: [{ ...site, epsilon_kJ_mol: 0.36 }], ligand: [ion], n_starts: 4, mc_steps: 2000 });
    expect(out.check.passed).toBe(true);
    expect(Number.isFinite(out.value)).toBe(true);
    expect(out.value).toBeLessThan(-0.36);
    const [x, y, z] = (out.outputs.ligand_xyz_A as number[][])[0]!;
    expect(Math.hypot(x!, y!, z!)).toBeGreaterThan(1.7);
  });

  it('work limit: receptor × ligand × n_starts × steps', () => {
    const big = Array.from({ length: 2000 }, (_, i) => ({ x: i, y: 0, z: 0, sigma_A: 3, epsilon_kJ_mol: 0.3 }));
    const lig = Array.from({ length: 50 }, (_, i) => ({ x: i, y: 1, z: 0, sigma_A: 3, epsilon_kJ_mol: 0.3 }));
    expectInputError({ receptor: big, ligand: lig, n_starts: 64, mc_steps: 50000 }, 'mc_steps');
    expectInputError({ n_starts: 64, mc_steps: 50000, receptor: big }, 'mc_steps');
    expect(() => dock.resolve({ n_starts: 64, mc_steps: 50000 })).not.toThrow();
  });
});

describe('dock: the gate', () => {
  it('a result 1 % off in either compared quantity fails the gate', () => {
    expectGateRefusesPerturbed(solve({}));
  });
});
