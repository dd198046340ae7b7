import { describe, expect, it } from 'vitest';
import { lorenz, type LorenzState } from '../../src/solvers/lorenz.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

describe('lorenz', () => {
  it('defaults: RK4 agrees with the Dormand–Prince reference and the check passes', () => {
    const inputs = lorenz.resolve({});
    expect(inputs).toEqual({ sigma: 10, rho: 28, beta: 8 / 3, x0: 1, y0: 1, z0: 1, t_end: 10, dt: 1e-3 });
    const out = lorenz.run(inputs);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-6);
    expect(out.unit).toBe('1');
    expect(out.mode).toBeNull();
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('trajectory');
    const rule8 = out.rule8 as number[];
    expect(rule8.length).toBe(512);
    expect(rule8[511]).toBe(out.value);
    const traj = out.outputs.trajectory as { t: number[]; x: number[]; y: number[]; z: number[] };
    expect(traj.t.length).toBe(2000);
    expect(traj.z.length).toBe(2000);
    expect(traj.t[0]).toBe(0);
    expect(traj.t[1999]).toBeCloseTo(10, 12);
    // The attractor is bounded: z stays within (0, 50) for the classic parameters.
    for (const v of traj.z) expect(v > 0 && v < 50).toBe(true);
    const lyap = out.outputs.max_lyapunov_estimate as number;
    expect(Number.isFinite(lyap)).toBe(true);
    expect((out.state as LorenzState).t).toBeCloseTo(10, 12);
  });

  it('the origin is a fixed point: the state stays exactly 0 and the check passes (0 against 0 is no error)', () => {
    const out = lorenz.run(lorenz.resolve({ x0: 0, y0: 0, z0: 0 }));
    expect(out.value).toBe(0);
    expect(out.check).toMatchObject({ computed: 0, reference: 0, rel_error: 0, passed: true });
  });

  it('x = y = 0 is invariant: z decays exactly as z0·exp(−βt)', () => {
    for (const [beta, tEnd] of [
      [2, 3],
      [0.5, 7],
    ] as const) {
      const out = lorenz.run(lorenz.resolve({ x0: 0, y0: 0, z0: 5, beta, t_end: tEnd }));
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.value / (5 * Math.exp(-beta * tEnd)) - 1)).toBeLessThan(1e-10);
    }
  });

  it('t_end starts at 1e-3: there z = z0·e^(−βt) on the invariant axis and every output is finite; 5e-324 is a 400', () => {
    // Old code: "> 0" let t_end = 5e-324 through and the Lyapunov estimate came out −∞.
    const out = lorenz.run(lorenz.resolve({ x0: 0, y0: 0, z0: 5, t_end: 1e-3 }));
    expect(out.check.passed).toBe(true);
    expect(Math.abs(out.value / (5 * Math.exp((-8 / 3) * 1e-3)) - 1)).toBeLessThan(1e-12);
    expect(Number.isFinite(lorenz.run(lorenz.resolve({ t_end: 1e-3 })).outputs.max_lyapunov_estimate as number)).toBe(true);
    for (const t of [5e-324, 1e-300, 9e-4])
      expectInputError(() => lorenz.resolve({ t_end: t }), 't_end', { status: 400, allowed: { min: 1e-3, inclusive: true } });
  });

  it('below the Hopf threshold the orbit settles on the fixed point z = ρ − 1', () => {
    const out = lorenz.run(lorenz.resolve({ rho: 10, t_end: 20 }));
    expect(out.check.passed).toBe(true);
    expect(Math.abs(out.value - 9)).toBeLessThan(1e-3);
    const s = out.outputs.state as { x: number; y: number };
    const xStar = Math.sqrt((8 / 3) * 9);
    expect(Math.abs(Math.abs(s.x) - xStar)).toBeLessThan(1e-3);
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError(() => lorenz.resolve({ omega: 1 }), 'omega');
    expectInputError(() => lorenz.resolve({ sigma: 'ten' }), 'sigma');
    expectInputError(() => lorenz.resolve({ rho: 101 }), 'rho');
    expectInputError(() => lorenz.resolve({ t_end: 0 }), 't_end');
    expectInputError(() => lorenz.resolve({ t_end: 21 }), 't_end');
    expectInputError(() => lorenz.resolve({ dt: 1e-6 }), 'dt');
    expectInputError(() => lorenz.resolve({ x0: -101 }), 'x0');
    expectInputError(() => lorenz.resolveState!({ x: 1, y: 2 }, lorenz.resolve({})), 'initialState');
    expectInputError(() => lorenz.resolveState!({ x: 1, y: 2, z: 3, t: 0, w: 1 }, lorenz.resolve({})), 'initialState');
    // Far outside anything a run reaches from |x0|, |y0|, |z0| ≤ 100 (1e200 made the step underflow: a 500).
    for (const state of [
      { x: 1e200, y: 1e200, z: 1e200, t: 0 },
      { x: 1, y: -2e4, z: 3, t: 0 },
    ])
      expectInputError(() => lorenz.resolveState!(state, lorenz.resolve({})), 'initialState', { status: 400 });
    expect(lorenz.run(lorenz.resolve({ t_end: 1 }), lorenz.resolveState!({ x: 300, y: -300, z: 300, t: 0 }, lorenz.resolve({ t_end: 1 }))).check.passed).toBe(
      true,
    );
  });

  it('is deterministic', () => {
    const a = lorenz.run(lorenz.resolve({ t_end: 3 }));
    const b = lorenz.run(lorenz.resolve({ t_end: 3 }));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('two half runs equal one whole run bit for bit', () => {
    const whole = lorenz.run(lorenz.resolve({ t_end: 8 }));
    const first = lorenz.run(lorenz.resolve({ t_end: 4 }));
    const state = lorenz.resolveState!(JSON.parse(JSON.stringify(first.state)), lorenz.resolve({ t_end: 4 }));
    const second = lorenz.run(lorenz.resolve({ t_end: 4 }), state);
    expect(second.state).toEqual(whole.state);
    expect(Object.is(second.value, whole.value)).toBe(true);
    expect(second.check.passed).toBe(true);
  });

  it('a 1 % error in the computed quantity fails the gate', () => {
    expectGateRefusesPerturbed(lorenz.run(lorenz.resolve({})));
  });
});
