// Open-ended solver inputs ("> 0", "any", "≠ 0") now have finite, physical ranges, against a real node: a value
// outside is 400 SVC_INVALID_INPUT naming the field and the allowed range (these values used to answer 500
// SVC_SOLVER_ERROR, or a result with NaN in it), nothing is charged, the range is what operator-spec documents, and
// a value at a range's end seals with the analytic answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
let key: string;

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 100000 });
  key = (await zkIdentity(t.url, 'ranges')).key;
});
afterAll(async () => {
  await t.destroy();
});

const balance = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body;
const solve = (solver: string, inputs: Record<string, unknown>) => call(t.url, 'POST', '/api/svc/solve', { solver, inputs }, bearer(key));

describe('finite input ranges through HTTP', () => {
  // [solver, inputs, field, allowed]: each of these was a 500 or a non-finite result before.
  const outside: [string, Record<string, unknown>, string, unknown][] = [
    ['buckling', { second_moment_m4: 1e-300 }, 'second_moment_m4', { min: 1e-24, inclusive: true }],
    ['buckling', { second_moment_m4: 1e300 }, 'second_moment_m4', { max: 1e4, inclusive: true }],
    ['fea', { height_m: 5e-324 }, 'height_m', { min: 1e-6, inclusive: true }],
    ['fea', { tip_load_N: -Number.MAX_VALUE }, 'tip_load_N', { min: -1e12, inclusive: true }],
    ['wave', { tension_N_m: 1e-300 }, 'tension_N_m', { min: 1e-6, inclusive: true }],
    ['predator_prey', { alpha_per_day: 1e30 }, 'alpha_per_day', { max: 1e3, inclusive: true }],
    ['predator_prey', { prey0: 5e-324 }, 'prey0', { min: 1e-6, inclusive: true }],
    ['kalman', { dt_s: 1e300 }, 'dt_s', { max: 1e6, inclusive: true }],
    ['kalman', { true_v0_m_s: -Number.MAX_VALUE }, 'true_v0_m_s', { min: -299_792_458, inclusive: true }],
    ['quantum_levels', { omega_rad_s: 5e-324 }, 'omega_rad_s', { min: 1e3, inclusive: true }],
    ['acoustic', { radius_m: 1e300 }, 'radius_m', { max: 10, inclusive: true }],
    ['quant', { spot: 1e-300 }, 'spot', { min: 1e-6, inclusive: true }],
    ['grid', { base_MVA: 5e-324 }, 'base_MVA', { min: 1e-3, inclusive: true }],
    // A 422 blaming the check (0 re-scored against 0), not the input; 1e10 sealed a pose of ~1e-56 kJ/mol.
    ['dock', { box_center_A: [1e300, 0, 0] }, 'box_center_A.0', { max: 1e4, inclusive: true }],
    ['dock', { box_center_A: [0, 0, 1e10] }, 'box_center_A.2', { max: 1e4, inclusive: true }],
    ['dock', { ligand: [{ x: 0, y: -1e300, z: 0, sigma_A: 3.4, epsilon_kJ_mol: 0.36 }] }, 'ligand.0.y', { min: -1e4, inclusive: true }],
  ];

  it('a value outside a range is 400 naming the field and the range, nothing charged', async () => {
    const before = await balance();
    for (const [solver, inputs, field, allowed] of outside) {
      const e = expectError(await solve(solver, inputs), 400, 'SVC_INVALID_INPUT');
      expect(e.field, `${solver} ${JSON.stringify(inputs)}`).toBe(field);
      expect(e.allowed, `${solver} ${field}`).toEqual(allowed);
    }
    // Reasons that are not a plain min/max name the range in words.
    const amp = expectError(await call(t.url, 'POST', '/api/svc/wave', { amplitude_m: Number.MAX_VALUE }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect([amp.field, amp.reason]).toEqual(['amplitude_m', 'magnitude must be 1e-15 … 100 m (either sign)']);
    // A combination only the solver can judge: an orbit that would drop the prey to e^-1000 of its equilibrium.
    const deep = expectError(await solve('predator_prey', { prey0: 1e4 }), 400, 'SVC_INVALID_INPUT');
    expect(deep.field).toBe('prey0');
    expect(deep.reason).toMatch(/would fall to ~e\^-/);
    // Too few steps for the Kalman filter to settle: refused by the run before any work, still a 400.
    const steps = expectError(await solve('kalman', { steps: 10 }), 400, 'SVC_INVALID_INPUT');
    expect([steps.field, steps.allowed]).toEqual(['steps', { min: 27, max: 100_000 }]);
    expect(await balance()).toEqual(before);
  });

  it('operator-spec documents the finite ranges', async () => {
    const spec = async (solver: string) =>
      Object.fromEntries(
        ((await call(t.url, 'POST', '/api/svc/operator-spec', { solver }, bearer(key))).body.inputs as { key: string; range: string }[]).map((i) => [
          i.key,
          i.range,
        ]),
      );
    expect((await spec('buckling')).second_moment_m4).toBe('1e-24 … 1e4');
    expect((await spec('quantum_levels')).omega_rad_s).toBe('1e3 … 1e20 (harmonic)');
    expect((await spec('kalman')).dt_s).toBe('1e-6 … 1e6');
    expect((await spec('dock')).box_center_A).toBe('[x, y, z], each −1e4 … 1e4');
  });

  it('a check whose reference is exactly 0 seals when the value is exactly 0 too: lorenz from the origin, a fixed point', async () => {
    const r = await solve('lorenz', { x0: 0, y0: 0, z0: 0 });
    expect(r.status, r.text).toBe(200);
    expect(r.body.value).toBe(0);
    expect(r.body.check).toMatchObject({ computed: 0, reference: 0, rel_error: 0, passed: true });
    expect(r.body.result_id).toMatch(/^res_/);
  });

  it('the ends of the ranges seal with the analytic answer', async () => {
    // Euler load π²EI/L² at the smallest section and the stiffest material.
    const b = await solve('buckling', { second_moment_m4: 1e-24, youngs_modulus_Pa: 1e12 });
    expect(b.status, b.text).toBe(200);
    const euler = (Math.PI ** 2 * 1e12 * 1e-24) / 9;
    expect(Math.abs(b.body.value - euler) / euler).toBeLessThan(5e-6);
    expect(typeof b.body.result_id).toBe('string');
    // Harmonic oscillator ground state ħω/2 at the highest frequency.
    const q = await solve('quantum_levels', { omega_rad_s: 1e20 });
    expect(q.status, q.text).toBe(200);
    const half = (6.62607015e-34 / (2 * Math.PI)) * 1e20 * 0.5;
    expect(Math.abs(q.body.value - half) / half).toBeLessThan(2e-5);
    // Lotka–Volterra near equilibrium at the slowest rates: period 2π/√(αγ).
    const p = await solve('predator_prey', {
      alpha_per_day: 1e-4,
      gamma_per_day: 1e-4,
      beta_per_day: 1e-12,
      delta_per_day: 1e-12,
      prey0: 1e8,
      predator0: 0.999e8,
      dt_days: 1,
      max_days: 1e5,
    });
    expect(p.status, p.text).toBe(200);
    expect(Math.abs(p.body.value - 2 * Math.PI * 1e4) / (2 * Math.PI * 1e4)).toBeLessThan(1e-5);
    // The default ring moved out to x = 1e4 (its box follows its centroid) binds the probe as at the origin: −6ε.
    const ring = Array.from({ length: 6 }, (_, k) => ({
      x: 1e4 - 3 + 3 * Math.cos((Math.PI * k) / 3),
      y: 3 * Math.sin((Math.PI * k) / 3),
      z: 0,
      sigma_A: 3.4,
      epsilon_kJ_mol: 0.36,
    }));
    const d = await solve('dock', { receptor: ring });
    expect(d.status, d.text).toBe(200);
    expect(Math.abs(d.body.value - -2.16) / 2.16).toBeLessThan(1e-3);
  });
});
